package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

func startProxy(t *testing.T, allow ...string) (*Proxy, string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "p.sock")
	p, err := NewProxy(sock, allow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, sock
}

// ask sends a raw request on a new connection to the proxy and returns the
// response and the connection.
func ask(t *testing.T, sock, req string) (*http.Response, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, br, c
}

// echoServer answers each line with "echo:" and the line, on host loopback.
func echoServer(t *testing.T) (port int, accepted chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted = make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("echo:" + line))
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, accepted
}

func TestProxyConnect(t *testing.T) {
	allowedPort, _ := echoServer(t)
	otherPort, gotOther := echoServer(t)
	allowed := fmt.Sprintf("127.0.0.1:%d", allowedPort)
	p, sock := startProxy(t, allowed)

	resp, br, c := ask(t, sock, "CONNECT "+allowed+" HTTP/1.1\r\nHost: "+allowed+"\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT to an allowed port: %s", resp.Status)
	}
	if _, err := io.WriteString(c, "hi\n"); err != nil {
		t.Fatal(err)
	}
	if line, _ := br.ReadString('\n'); line != "echo:hi\n" {
		t.Errorf("through the tunnel: %q", line)
	}

	other := fmt.Sprintf("127.0.0.1:%d", otherPort)
	for i := 0; i < 2; i++ {
		resp, _, _ = ask(t, sock, "CONNECT "+other+" HTTP/1.1\r\nHost: "+other+"\r\n\r\n")
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("CONNECT to an unlisted port: %s, want 403", resp.Status)
		}
	}
	if len(gotOther) != 0 {
		t.Error("the proxy connected to an unlisted port")
	}
	// A name that resolves to an allowed address is still another name.
	resp, _, _ = ask(t, sock, fmt.Sprintf("CONNECT localhost:%d HTTP/1.1\r\nHost: x\r\n\r\n", allowedPort))
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT to localhost for an allowed 127.0.0.1: %s, want 403", resp.Status)
	}
	got := p.Refused()
	if len(got) != 2 || got[0] != (Refused{other, 2}) {
		t.Errorf("Refused = %+v, want %s twice first", got, other)
	}
}

func TestProxyForwardsPlainHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "path=%s", r.URL.Path)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	p, sock := startProxy(t, host)

	resp, _, _ := ask(t, sock, "GET "+srv.URL+"/a HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 100))
	if resp.StatusCode != http.StatusOK || string(body) != "path=/a" {
		t.Errorf("GET through the proxy: %s %q", resp.Status, body)
	}
	resp, _, _ = ask(t, sock, "GET http://10.0.0.9/ HTTP/1.1\r\nHost: 10.0.0.9\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET of an unlisted host: %s, want 403", resp.Status)
	}
	resp, _, _ = ask(t, sock, "GET /a HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("origin-form GET: %s, want 400", resp.Status)
	}
	if got := p.Refused(); len(got) != 1 || got[0].Host != "10.0.0.9:80" {
		t.Errorf("Refused = %+v", got)
	}
}

func TestParseHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM": "example.com:0", "example.com:8443": "example.com:8443", "[::1]:80": "::1:80", "127.0.0.1:5432": "127.0.0.1:5432",
		"https://x.org": "error", "x.org/path": "error", "x.org:0": "error", "x.org:http": "error", "": "error", "a b": "error",
	} {
		hp, err := parseHost(in)
		got := fmt.Sprintf("%s:%d", hp.host, hp.port)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("parseHost(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestCLISettings(t *testing.T) {
	for in, want := range map[string]string{
		"":              `{"sandbox":{"enabled":false}}`,
		`{"model":"x"}`: `{"model":"x","sandbox":{"enabled":false}}`,
		`{"sandbox":{"enabled":true,"autoAllowBashIfSandboxed":true}}`: `{"sandbox":{"autoAllowBashIfSandboxed":true,"enabled":false}}`,
	} {
		got, err := CLISettings(in)
		if err != nil || got != want {
			t.Errorf("CLISettings(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := CLISettings("[1]"); err == nil {
		t.Error("CLISettings accepted a JSON list")
	}
}

func FuzzParseHost(f *testing.F) {
	for _, s := range []string{"example.com", "x:1", "[::1]:2", "a/b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hp, err := parseHost(s)
		if err == nil && (hp.host == "" || hp.port < 0 || hp.port > 65535 || strings.ContainsAny(hp.host, "/ @?#")) {
			t.Errorf("parseHost(%q) = %+v", s, hp)
		}
	})
}

// Close ends every tunnel and upstream connection: no goroutine outlives
// the proxy.
func TestProxyCloseLeavesNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	defer srv.Close()
	port, _ := echoServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	echo := fmt.Sprintf("127.0.0.1:%d", port)
	before := runtime.NumGoroutine()
	p, err := NewProxy(filepath.Join(t.TempDir(), "p.sock"), []string{host, echo})
	if err != nil {
		t.Fatal(err)
	}
	sock := p.ln.Addr().String()
	resp, _, _ := ask(t, sock, "GET "+srv.URL+"/ HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
	_, _ = io.ReadAll(resp.Body)
	if resp, _, _ := ask(t, sock, "CONNECT "+echo+" HTTP/1.1\r\nHost: "+echo+"\r\n\r\n"); resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %s", resp.Status)
	} // the tunnel stays open: Close must end it
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if !poll.Until(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		n := runtime.NumGoroutine()
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}
