package cmd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

func serveCmd(ctx context.Context, out *syncBuffer, args ...string) error {
	io := &IO{Out: out, ErrOut: out, Getenv: func(string) string { return "" }}
	c := NewCmdServe(io, nil)
	c.SetArgs(args)
	c.SetOut(out)
	c.SetErr(out)
	return c.ExecuteContext(ctx)
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:7077"} {
		err := serveCmd(context.Background(), &syncBuffer{}, "--addr", addr, "--state-dir", t.TempDir())
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--token-file") {
			t.Errorf("%s: %v (exit %d), want exit 2", addr, err, ExitCode(err))
		}
	}
}

// TestServeLifecycle: the URL carries a generated token that works, the
// token appears nowhere else, and a signal (ctx) stops the server with 0.
func TestServeLifecycle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCmd(ctx, out, "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude")
	}()
	var url string
	poll.Until(10*time.Second, func() bool {
		s := out.String()
		if i := strings.Index(s, "http://"); i >= 0 && strings.Contains(s[i:], "\n") {
			url = strings.Fields(s[i:])[0]
			return true
		}
		return false
	})
	base, token, ok := strings.Cut(url, "#token=")
	if !ok || len(token) != 64 {
		t.Fatalf("no URL with a token in %q", out.String())
	}
	if strings.Count(out.String(), token) != 1 {
		t.Fatalf("the token is printed more than once: %q", out.String())
	}
	req, _ := http.NewRequest("GET", base+"api/health", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health with the printed token: %v %v", resp, err)
	}
	resp.Body.Close()
	stopServe(t, cancel, done)
}

func TestServeTransportRefusals(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(tok, []byte("serve-test-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, []byte("serve-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0", "--token-file", tok}, "--tls-cert"},
		{[]string{"--addr", ":0", "--token-file", tok}, "--insecure-http"},
		{[]string{"--addr", "0.0.0.0:0", "--token-file", tok, "--insecure-http"}, "--public-url"},
		{[]string{"--addr", "127.0.0.1:0", "--token-file", tok, "--tls-cert", tok}, "--tls-key"},
		{[]string{"--addr", "127.0.0.1:0", "--token-file", tok, "--read-token-file", other}, "same token"},
		{[]string{"--addr", "127.0.0.1:0", "--client-allow", "everything"}, "--client-allow"},
		{[]string{"--addr", "127.0.0.1:0", "--metrics-addr", "0.0.0.0:0"}, "--metrics-addr"},
	} {
		err := serveCmd(context.Background(), &syncBuffer{}, append(tc.args, "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude")...)
		if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want exit 2 naming %s", tc.args, err, ExitCode(err), tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "serve-test-token") {
			t.Errorf("%v: the error shows a token: %v", tc.args, err)
		}
	}
}

// TestServeTLS: with a certificate the server speaks HTTPS only.
func TestServeTLS(t *testing.T) {
	cert, key := selfSigned(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCmd(ctx, out, "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude",
			"--tls-cert", cert, "--tls-key", key, "--access-log", "off")
	}()
	url := servedURL(t, out, "https://")
	base, _, ok := strings.Cut(url, "#token=")
	if !ok {
		t.Fatalf("no https URL in %q", out.String())
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(base + "healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("https healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get("http://" + strings.TrimPrefix(base, "https://") + "healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered on a TLS server")
		}
	}
	stopServe(t, cancel, done)
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pneuma test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// TestServeConnectionCap: --max-conns connections at once; the next waits
// until one closes.
func TestServeConnectionCap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- serveCmd(ctx, out, "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude",
			"--max-conns", "2", "--access-log", "off")
	}()
	url := servedURL(t, out, "http://")
	base, _, _ := strings.Cut(url, "#")
	host := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	get := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(base + "healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get(500 * time.Millisecond); err == nil {
		t.Fatal("a third connection was served while two were held")
	}
	held[0].Close()
	if err := get(10 * time.Second); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
	held[1].Close()
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServePolicyFromConfig: the client policy comes from pneuma.yaml
// like every setting, and flags win.
func TestServePolicyFromConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pneuma.yaml")
	yaml := "client_allow: [env, verify]\nclient_permission_mode: [plan]\nclient_max_timeout: 10m\nclient_max_turns: 5\nmax_jobs: 3\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var got *ServeOptions
	io := &IO{Out: &syncBuffer{}, ErrOut: &syncBuffer{}, Getenv: func(string) string { return "" }}
	c := NewCmdServe(io, func(_ context.Context, o *ServeOptions) error { got = o; return nil })
	c.SetArgs([]string{"--config", cfg, "--client-max-turns", "7"})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.ClientAllow, ",") != "env,verify" || strings.Join(got.ClientPermissionModes, ",") != "plan" ||
		got.ClientMaxTimeout != 10*time.Minute || got.ClientMaxTurns != 7 || got.MaxJobs != 3 {
		t.Fatalf("options: %+v", got)
	}
}

// servedURL waits for the URL pneuma serve prints (scheme "http://" or
// "https://") in out and returns it; "" when none came within 10 s.
func servedURL(t *testing.T, out *syncBuffer, scheme string) string {
	t.Helper()
	var url string
	poll.Until(10*time.Second, func() bool {
		if i := strings.Index(out.String(), scheme); i >= 0 && strings.Contains(out.String()[i:], "\n") {
			url = strings.Fields(out.String()[i:])[0]
		}
		return url != ""
	})
	return url
}

// TestServeIdleTimeout: a keep-alive connection that goes quiet is closed
// (an idle connection is a slot of --max-conns held for nothing).
func TestServeIdleTimeout(t *testing.T) {
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveCmd(ctx, out, "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude",
			"--idle-timeout", "200ms", "--access-log", "off")
	}()
	defer func() { cancel(); <-done }()
	base, _, _ := strings.Cut(servedURL(t, out, "http://"), "#")
	host := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + host + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	data, err := io.ReadAll(conn) // the answer, then EOF when the server closes the idle connection
	if err != nil || !strings.HasPrefix(string(data), "HTTP/1.1 200") {
		t.Fatalf("idle keep-alive connection not closed by the server: %q, %v", data, err)
	}
}

// stopServe cancels a serveCmd started in the background and waits for it
// to return without an error.
func stopServe(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}
