package web_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/serve/web"
)

// The stand-in serves the console with a scripted imitation of a few of pneuma
// serve's routes, for content the real server never sends: an exported
// transcript with a raw script in it (the real export escapes). Everything
// else runs against the real server (real_test.go).

// xss is what a hostile model or tool might write: it must show as text.
const xss = `<script>window.__xss=1</script><img src=x onerror="window.__xss=1">`

// standIn serves web.Handler and the scripted routes on 127.0.0.1.
type standIn struct {
	token string
	addr  string
}

// startStandIn serves until the test ends.
func startStandIn(t *testing.T) *standIn {
	s := &standIn{token: "test-token-" + fmt.Sprint(time.Now().UnixNano())}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	mux.Handle("/api/", s.auth(http.HandlerFunc(s.api)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *standIn) URL() string   { return "http://" + s.addr }
func (s *standIn) Token() string { return s.token }

func (s *standIn) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, `{"error":"missing Authorization: Bearer token"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// api answers the runs list (empty), one job's stream, diff and transcript,
// and one history transcript; the diff and transcripts carry xss.
func (s *standIn) api(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/runs":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode([]any{})
	case "/api/runs/run-9/jobs/lint/stream":
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintf(w, `{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}`+"\n")
		fmt.Fprintf(w, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":%q}]}}`+"\n", "ok "+xss)
	case "/api/runs/run-9/jobs/lint/diff":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "diff --git a/main.go b/main.go\n--- a/main.go\n+++ b/main.go\n@@ -1,2 +1,2 @@\n package main\n-// old "+xss+"\n+// new comment\n")
	case "/api/runs/run-9/jobs/lint/transcript", "/api/history/sessions/h-1":
		transcript(w)
	default:
		http.NotFound(w, r)
	}
}

// transcript is an exported transcript gone wrong: raw script and an
// onerror image, which the console's sandboxed frame must never run.
func transcript(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>Transcript</title></head><body><h1>Transcript</h1>`+
		`<p>User: please fix it</p><p>Assistant: &lt;script&gt;window.__xss=1&lt;/script&gt; is shown as text</p>`+
		`<script>window.top.__xss=1;parent.__xss=1</script><img src=x onerror="top.__xss=1"></body></html>`)
}
