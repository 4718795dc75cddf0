package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

func TestLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:8080", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{":8080", false},
		{"10.0.0.1:80", false},
		{"nonsense", false},
	} {
		if err := loopback(tc.addr); (err == nil) != tc.ok {
			t.Errorf("loopback(%q) = %v, want ok=%t", tc.addr, err, tc.ok)
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	t.Parallel()
	urlFile := filepath.Join(t.TempDir(), "url")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-text", "bench ok", "-url-file", urlFile}, &stdout, &stderr) }()

	var url string
	if !poll.Until(10*time.Second, func() bool {
		b, err := os.ReadFile(urlFile)
		url = strings.TrimSpace(string(b))
		return err == nil && url != ""
	}) {
		cancel()
		<-done
		t.Fatalf("no URL written within 10s; stderr: %s", stderr.String())
	}
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "bench ok") {
		t.Errorf("answer %s, want the -text", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if got := strings.TrimSpace(stdout.String()); got != url {
		t.Errorf("stdout %q, want the URL %q", got, url)
	}
}

func TestRunRejectsBadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-addr", "0.0.0.0:0"}, {"extra"}, {"-nope"}} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}

func TestAgent(t *testing.T) {
	t.Parallel()
	ask := func(h fakeapi.Handler, body string) map[string]any {
		t.Helper()
		srv, err := fakeapi.Start(h, fakeapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m["content"].([]any)[0].(map[string]any)
	}
	quiet := log.New(io.Discard, "", 0)
	const prompt = `{"model":"m","system":"Env\nPrimary working directory: /w\n","messages":[{"role":"user","content":"go"}]}`
	const afterWrite = `{"model":"m","messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Write","input":{}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`
	const noDir = `{"model":"m","system":"custom","messages":[{"role":"user","content":"go"}]}`

	if b := ask(agent("fin", "out.txt", quiet), prompt); b["type"] != "tool_use" || b["input"].(map[string]any)["file_path"] != "/w/out.txt" {
		t.Errorf("first answer %v, want a Write of /w/out.txt", b)
	}
	for name, tc := range map[string]struct {
		write, body string
	}{
		"after the write": {"out.txt", afterWrite},
		"without -write":  {"", prompt},
		"no working dir":  {"out.txt", noDir},
	} {
		if b := ask(agent("fin", tc.write, quiet), tc.body); b["type"] != "text" || b["text"] != "fin" {
			t.Errorf("%s: answer %v, want the text", name, b)
		}
	}
}
