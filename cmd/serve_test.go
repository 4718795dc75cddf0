package cmd

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
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
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if i := strings.Index(out.String(), "http://"); i >= 0 && strings.Contains(out.String()[i:], "\n") {
			url = strings.Fields(out.String()[i:])[0]
			break
		}
	}
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
