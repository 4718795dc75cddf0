package serve_test

// End-to-end tests as clients use pneuma serve: a real `pneuma serve`
// process on a loopback port, real HTTP requests and WebSocket clients, and
// the real Claude Code CLI against the fake Anthropic API of this process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/serve"
)

// binDir holds the pneuma binary TestMain's tests build (once, on demand).
var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pneuma-serve-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// pneumaBinary builds the pneuma command once (with -race when the tests
// run with it, so that the server process is checked too).
func pneumaBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(binDir, "pneuma")
		args := []string{"build", "-o", binPath}
		if serve.RaceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "github.com/pneuma-cli/pneuma")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

const e2eToken = "e2e-token-0123456789abcdef"

// server is one `pneuma serve` process; restart starts another on the
// same state directory.
type server struct {
	t        *testing.T
	args     []string
	env      []string
	dir      string
	cmd      *exec.Cmd
	url      string
	stderr   *lockedBuffer
	waitDone chan struct{}
	// pids are the CLI processes the server reported (cli_started): a
	// killed server leaves them to the test to end.
	mu   sync.Mutex
	pids map[int]bool
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer starts pneuma serve with state under t.TempDir(), root the
// repository, the CLI pointed at the fake API through env.
func startServer(t *testing.T, env *claudetest.Env, root string) *server {
	t.Helper()
	state := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, env: env.Environ(), dir: root, pids: map[int]bool{},
		args: []string{"serve", "--addr", "127.0.0.1:0", "--state-dir", state, "--root", root,
			"--token-file", tokenFile, "--claude", claudetest.Binary(t), "--max-sessions", "4"}}
	s.start()
	t.Cleanup(s.cleanup)
	return s
}

func (s *server) start() {
	t := s.t
	t.Helper()
	cmd := exec.Command(pneumaBinary(t), s.args...)
	cmd.Dir, cmd.Env = s.dir, s.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.stderr = &lockedBuffer{}
	cmd.Stderr = s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd, s.waitDone = cmd, make(chan struct{})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "pneuma serve: "); ok {
				select {
				case urls <- strings.TrimSuffix(u, "/"):
				default:
				}
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(s.waitDone) }()
	select {
	case s.url = <-urls:
	case <-s.waitDone:
		t.Fatalf("pneuma serve exited: %s", s.stderr)
	case <-time.After(90 * time.Second): // a restart reads its logs; -race on a loaded CI machine is slow
		t.Fatalf("pneuma serve printed no URL within 90s; stderr:\n%s", s.stderr)
	}
}

// stop sends sig and waits for the process to exit.
func (s *server) stop(sig syscall.Signal) {
	s.t.Helper()
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.waitDone:
	case <-time.After(90 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.waitDone
		s.t.Fatalf("pneuma serve did not stop on %v; stderr:\n%s", sig, s.stderr)
	}
	s.checkRaces()
}

// restart starts a new server process on the same state.
func (s *server) restart() { s.t.Helper(); s.start() }

func (s *server) checkRaces() {
	if strings.Contains(s.stderr.String(), "WARNING: DATA RACE") {
		s.t.Errorf("the server raced:\n%s", s.stderr)
	}
}

func (s *server) cleanup() {
	select {
	case <-s.waitDone:
	default:
		s.stop(syscall.SIGTERM)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid := range s.pids {
		// Only a CLI still working under the test's repository: the pid of
		// one that ended may be another process's now.
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil && strings.HasPrefix(cwd, s.dir) {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // each CLI leads its own group
		}
	}
}

// notePIDs records the pids of cli_started events.
func (s *server) notePIDs(evs []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ev := range evs {
		if ev["type"] == "cli_started" {
			if pid, ok := ev["pid"].(float64); ok {
				s.pids[int(pid)] = true
			}
		}
	}
}

// do sends a request with the token; body is JSON (a string or any value).
func (s *server) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		r = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, s.url+path, r)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// must is do expecting a status, decoding the answer into out.
func (s *server) must(want int, method, path string, body, out any) {
	s.t.Helper()
	code, data := s.do(method, path, body)
	if code != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, code, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// events is every event of a session so far.
func (s *server) events(id string) []map[string]any {
	s.t.Helper()
	var evs []map[string]any
	for after := int64(0); ; {
		page := s.poll(fmt.Sprintf("/api/sessions/%s/events?after=%d", id, after))
		evs = append(evs, page.Events...)
		if after = page.NextAfter; after >= page.LastSeq {
			return evs
		}
	}
}

// page is a long poll's answer.
type page struct {
	Events    []map[string]any `json:"events"`
	NextAfter int64            `json:"next_after"`
	LastSeq   int64            `json:"last_seq"`
}

// poll is one long poll (path with its query).
func (s *server) poll(path string) page {
	s.t.Helper()
	var p page
	s.must(200, "GET", path, nil, &p)
	s.notePIDs(p.Events)
	return p
}

// waitEvent polls the session's events until one of typ containing sub
// comes after seq after, and returns it.
func (s *server) waitEvent(id string, after int64, typ, sub string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		p := s.poll(fmt.Sprintf("/api/sessions/%s/events?after=%d&wait=2s", id, after))
		evs := p.Events
		for _, ev := range evs {
			if ev["type"] == typ {
				if b, _ := json.Marshal(ev); strings.Contains(string(b), sub) {
					return ev
				}
			}
		}
		if len(evs) > 0 {
			after = seqOf(evs[len(evs)-1])
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s event with %q; events:\n%s", typ, sub, dump(s.events(id)))
		}
	}
}

// session is the API's session object, the fields the tests look at.
type session struct {
	ID           string  `json:"id"`
	Status       string  `json:"status"`
	Branch       string  `json:"branch"`
	Worktree     string  `json:"worktree"`
	NumTurns     int     `json:"num_turns"`
	CostUSD      float64 `json:"cost_usd"`
	MessageCount int     `json:"message_count"`
	LastSeq      int64   `json:"last_seq"`
	CLISessionID string  `json:"cli_session_id"`
	FilesChanged *int    `json:"files_changed"`
	Insertions   *int    `json:"insertions"`
	Pending      []struct {
		RequestID string `json:"request_id"`
	} `json:"pending_permissions"`
}

func (s *server) create(body string) session {
	s.t.Helper()
	var o session
	s.must(201, "POST", "/api/sessions", body, &o)
	return o
}

func (s *server) get(id string) session {
	s.t.Helper()
	var o session
	s.must(200, "GET", "/api/sessions/"+id, nil, &o)
	return o
}

// waitStatus polls the session until its status is want.
func (s *server) waitStatus(id, want string) session {
	s.t.Helper()
	var o session
	if !poll.Until(90*time.Second, func() bool { o = s.get(id); return o.Status == want }) {
		s.t.Fatalf("session %s is %s, want %s; events:\n%s", id, o.Status, want, dump(s.events(id)))
	}
	return o
}

// dial opens a WebSocket with the header token.
func (s *server) dial(ctx context.Context, path string) *websocket.Conn {
	s.t.Helper()
	h := http.Header{"Authorization": {"Bearer " + e2eToken}}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+path, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		s.t.Fatalf("dial %s: %v", path, err)
	}
	c.SetReadLimit(16 << 20)
	s.t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, ctx context.Context, c *websocket.Conn, v any) {
	t.Helper()
	data, _ := json.Marshal(v)
	if err := c.Write(ctx, websocket.MessageText, data); err != nil {
		t.Fatalf("websocket write: %v", err)
	}
}

func seqOf(m map[string]any) int64 { f, _ := m["seq"].(float64); return int64(f) }

func dump(evs []map[string]any) string {
	var b strings.Builder
	for _, ev := range evs {
		data, _ := json.Marshal(ev)
		if len(data) > 300 {
			data = append(data[:300], "..."...)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// checkGapless fails unless evs have seqs from, from+1, ...
func checkGapless(t *testing.T, evs []map[string]any, from int64) {
	t.Helper()
	for i, ev := range evs {
		if got := seqOf(ev); got != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d:\n%s", i, got, from+int64(i), dump(evs))
		}
	}
}
