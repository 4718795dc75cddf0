package fakeapi_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

func TestStartServesAndCloses(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logged []string
	srv, err := fakeapi.Start(fakeapi.Sequence(fakeapi.Text("from Start")), fakeapi.Options{
		Logf: func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, fmt.Sprintf(format, args...))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Errorf("URL %q is not on 127.0.0.1", srv.URL)
	}
	resp := post(t, srv.URL, false, hello)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "from Start") {
		t.Fatalf("answer %d %s", resp.StatusCode, body)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("recorded %d requests, want 1", n)
	}
	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], "#1") {
		t.Errorf("log lines %q, want one for request #1", logged)
	}
	mu.Unlock()

	srv.Close()
	srv.Close() // idempotent
	if _, err := http.Get(srv.URL); err == nil {
		t.Error("server still answers after Close")
	}
}

func TestStartCloseReleasesHang(t *testing.T) {
	t.Parallel()
	srv, err := fakeapi.Start(fakeapi.Sequence(fakeapi.Hang()), fakeapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		errc <- err
	}()
	if _, err := srv.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not release a hung request")
	}
	if err := <-errc; err == nil {
		t.Error("the hung request completed instead of being dropped")
	}
}

func TestStartNoRecord(t *testing.T) {
	t.Parallel()
	srv, err := fakeapi.Start(nil, fakeapi.Options{NoRecord: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	post(t, srv.URL, true, hello)
	resp, err := http.Get(srv.URL + "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n, u := len(srv.Requests()), len(srv.Unhandled()); n != 0 || u != 0 {
		t.Errorf("NoRecord kept %d requests and %d unhandled", n, u)
	}
}

func TestStartListenError(t *testing.T) {
	t.Parallel()
	if srv, err := fakeapi.Start(nil, fakeapi.Options{Addr: "127.0.0.1:notaport"}); err == nil {
		srv.Close()
		t.Fatal("Start on a bad address succeeded")
	}
}

func TestWorkingDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ system, want string }{
		{"", ""},
		{"You write release notes.", ""},
		{"Env:\n - Primary working directory: /tmp/job one\n - Is a git repo: true", "/tmp/job one"},
		{"Primary working directory: /w", "/w"},
		{"Primary working directory: /w\r\nnext", "/w"},
	} {
		r := &fakeapi.Request{System: tc.system}
		if got := r.WorkingDir(); got != tc.want {
			t.Errorf("WorkingDir of %q = %q, want %q", tc.system, got, tc.want)
		}
	}
}

// TestWorkingDirInSystemMessage: CLI 2.1.332 states its environment in a
// system-role message inside "messages", not in the system prompt.
func TestWorkingDirInSystemMessage(t *testing.T) {
	t.Parallel()
	r := &fakeapi.Request{
		System: "You are Claude Code.",
		Messages: []fakeapi.Message{
			{Role: "system", Content: []fakeapi.Block{{Type: "text", Text: "# Environment\n - Primary working directory: /tmp/job two\n - Platform: linux"}}},
			{Role: "user", Content: []fakeapi.Block{{Type: "text", Text: "hello"}}},
		},
	}
	if got := r.WorkingDir(); got != "/tmp/job two" {
		t.Errorf("WorkingDir = %q, want /tmp/job two", got)
	}
}
