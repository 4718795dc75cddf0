package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/sandbox"
	"github.com/pneuma-cli/pneuma/serve"
	"github.com/pneuma-cli/pneuma/serve/web"
)

// realServer is pneuma serve itself (serve.New with the runner engine and
// this console) on 127.0.0.1, with the real Claude Code CLI talking to the
// fake Anthropic API. Restart stops it and starts a new one on the same
// state directory and port, as a restarted `pneuma serve` would.
type realServer struct {
	t     *testing.T
	token string
	addr  string
	state string
	repo  string // a git repository under the server's only root
	api   *fakeapi.Server
	env   *claudetest.Env
	bin   string
	allow []string // the host-reaching fields clients may set (Policy.Allow)

	mu  sync.Mutex
	srv *serve.Server
	hs  *http.Server
}

// Markers in prompts route the fake API's answers (see answer).
const (
	jobMarker     = "JOB-"
	sessionMarker = "SESSION-WRITE"
	// payloadFile is what the scripted session writes and reads back: the
	// Read tool's result carries xss to the console.
	payloadFile = "payload.html"
	// boxedMarker makes a job try a refused host and to write the path
	// after the marker in one Bash call, then end.
	boxedMarker = "BOXED-SCRIPT"
	refusedHost = "203.0.113.7:80"
)

// startReal starts the server; it and every CLI it started are stopped when
// the test ends.
func startReal(t *testing.T, allow ...string) *realServer {
	t.Helper()
	s := &realServer{t: t, token: "real-token-" + fmt.Sprint(time.Now().UnixNano()), bin: claudetest.Binary(t), allow: allow}
	s.api = fakeapi.New(t, answer)
	s.env = claudetest.NewEnv(t, s.api.URL)
	s.repo = claudetest.GitRepo(t)
	s.state = filepath.Join(t.TempDir(), "state")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.start(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *realServer) URL() string   { return "http://" + s.addr }
func (s *realServer) Token() string { return s.token }

// getenv is the server's environment: the CLI's hermetic one, so that
// /api/history reads the transcripts the test's CLIs wrote.
func (s *realServer) getenv(k string) string {
	for _, kv := range s.env.Environ() {
		if key, v, ok := strings.Cut(kv, "="); ok && key == k {
			return v
		}
	}
	return ""
}

func (s *realServer) start(ln net.Listener) {
	srv, err := serve.New(serve.Config{
		Token: s.token, Roots: []string{s.repo}, StateDir: s.state, WorkDir: s.repo,
		Binary: s.bin, Environ: s.env.Environ(), Getenv: s.getenv,
		Engine: serve.RunnerEngine, Web: web.Handler(), AuthTimeout: 5 * time.Second,
		Logf: s.t.Logf, Policy: serve.Policy{Allow: s.allow},
	})
	if err != nil {
		ln.Close()
		s.t.Fatalf("serve.New: %v", err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	s.mu.Lock()
	s.srv, s.hs = srv, hs
	s.mu.Unlock()
}

// stop shuts the server down as pneuma serve does on SIGTERM: sessions
// interrupted and saved, runs stopped, CLIs ended.
func (s *realServer) stop() {
	s.mu.Lock()
	srv, hs := s.srv, s.hs
	s.srv, s.hs = nil, nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	if err := srv.Shutdown(ctx); err != nil {
		s.t.Errorf("server shutdown: %v", err)
	}
	_ = hs.Close()
}

// Restart stops the server, stays down for down, and starts a new one on
// the same state directory and port.
func (s *realServer) Restart(down time.Duration) {
	s.stop()
	time.Sleep(down) // the behaviour under test: the server stays down this long
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.start(ln)
}

// writeJobs writes a jobs file of n jobs into the repository and returns its path.
func (s *realServer) writeJobs(names ...string) string {
	s.t.Helper()
	var b strings.Builder
	b.WriteString("version: 1\nconcurrency: 3\ndefaults:\n  permission_mode: acceptEdits\n  max_turns: 5\njobs:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  - name: %s\n    prompt: %s%s write %s.txt\n", n, jobMarker, n, n)
	}
	path := filepath.Join(s.repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return path
}

// report reads a run's report.json.
func (s *realServer) report(id string) map[string]any {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(s.state, "runs", id, "report.json"))
	if err != nil {
		s.t.Fatalf("report.json: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		s.t.Fatal(err)
	}
	return m
}

// get decodes the JSON answer of an API GET into v.
func (s *realServer) get(path string, v any) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(v); err != nil || res.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %s: %v", path, res.Status, err)
	}
}

// post sends body as JSON to an API route and decodes the answer into v.
func (s *realServer) post(path, body string, v any) {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.URL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		s.t.Fatalf("POST %s: %s: %s", path, res.Status, data)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		s.t.Fatalf("POST %s: %v", path, err)
	}
}

// TestMain lets this test binary stand in for pneuma's as the forwarder
// inside a sandbox.
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(os.Args[1:], sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// events reads a stream's whole event log through the API.
func (s *realServer) events(path string) []map[string]any {
	s.t.Helper()
	var out []map[string]any
	for after := int64(0); ; {
		var page struct {
			Events    []map[string]any `json:"events"`
			NextAfter int64            `json:"next_after"`
			LastSeq   int64            `json:"last_seq"`
		}
		s.get(fmt.Sprintf("%s/events?after=%d", path, after), &page)
		out = append(out, page.Events...)
		if after = page.NextAfter; after >= page.LastSeq {
			return out
		}
	}
}

// answer is the fake Anthropic API's script. A job (JOB-<name>) writes
// <name>.txt and says so. A session (SESSION-WRITE) streams some text and
// writes payloadFile holding xss (a Write that needs permission), reads it
// back (the tool result carries the payload) and ends the turn; any other
// message gets a short answer.
// (r.Text() may carry the CLI's reminders besides the prompt: match parts.)
func answer(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	usage := fakeapi.Usage{Input: 200, Output: 30}
	first := r.FirstUser().Text()
	switch {
	case strings.Contains(first, boxedMarker):
		if r.HasToolResult() {
			return fakeapi.Text("tried").WithUsage(usage)
		}
		// The prompt names a path the sandbox keeps read-only.
		path := strings.Fields(first[strings.Index(first, boxedMarker)+len(boxedMarker):])[0]
		return fakeapi.ToolUse(fakeapi.Bash("curl -s -m 3 -o /dev/null http://" + refusedHost + "/; echo x > " + path + "; true")).WithUsage(usage)
	case strings.Contains(first, jobMarker):
		name := strings.Fields(first[strings.Index(first, jobMarker)+len(jobMarker):])[0]
		if r.HasToolResult() {
			return fakeapi.Text("wrote " + name + ".txt").WithUsage(fakeapi.Usage{Input: 300, Output: 40, CacheRead: 1000})
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, name+".txt"), "from "+name+"\n")).WithUsage(usage)
	case strings.Contains(r.Text(), sessionMarker):
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, payloadFile), xss+"\n")).
			WithText("Let me write the file first.").WithUsage(usage)
	case r.HasToolResult():
		for _, b := range r.ToolResults() {
			if strings.Contains(b.Content, xss) {
				return fakeapi.Text("Done: the file holds the payload.").WithUsage(usage)
			}
		}
		return fakeapi.ToolUse(fakeapi.Read(filepath.Join(dir, payloadFile))).WithText("Now I read it back.").WithUsage(usage)
	}
	if strings.Contains(r.Text(), "after the restart") {
		return fakeapi.Text("Back after the restart.").WithUsage(usage)
	}
	return fakeapi.Text("Noted.").WithUsage(usage)
}
