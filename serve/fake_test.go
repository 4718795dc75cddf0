package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeEngine opens fakeSessions: serve's own logic tested without runner.
type fakeEngine struct {
	mu       sync.Mutex
	sessions []*fakeSession
	restores int
	// gate, when set, holds every turn's reply until it is closed.
	gate chan struct{}
}

func (f *fakeEngine) Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error) {
	f.mu.Lock()
	s := &fakeSession{opts: o, gate: f.gate}
	f.mu.Unlock()
	if o.Restore != nil {
		s.state = *o.Restore
	} else {
		if spec.Job.Repo == "/outside" {
			return nil, &OutsideRootsError{Repo: spec.Job.Repo, Roots: o.Roots}
		}
		s.spec = *spec
		s.state = SessionState{ID: o.ID, Name: spec.Job.Name, Status: StatusIdle, Repo: spec.Job.Repo, CreatedAt: time.Now().UTC()}
	}
	f.mu.Lock()
	f.sessions = append(f.sessions, s)
	if o.Restore != nil {
		f.restores++
	}
	f.mu.Unlock()
	return s, nil
}

func (f *fakeEngine) last() *fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[len(f.sessions)-1]
}

// fakeSession answers every message with an assistant event and a result.
type fakeSession struct {
	opts SessionOptions
	spec SessionSpec

	emitMu sync.Mutex // OnEvent calls are serialised
	mu     sync.Mutex
	state  SessionState
	sent   []string
	turns  sync.WaitGroup
	gate   chan struct{}
	prev   chan struct{} // closed when the last queued turn is done
}

func (s *fakeSession) emit(typ string, data any) {
	b, _ := json.Marshal(data)
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.opts.OnEvent(SessionEvent{Type: typ, Data: b})
}

func (s *fakeSession) Send(content string) error {
	s.mu.Lock()
	s.sent = append(s.sent, content)
	s.state.MessageCount++
	prev, done := s.prev, make(chan struct{})
	s.prev = done
	s.mu.Unlock()
	s.turns.Add(1)
	go func() { // turns run one after another, like the CLI's input queue
		defer s.turns.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		s.emit("status_change", map[string]string{"status": "running"})
		if s.gate != nil {
			<-s.gate
		}
		text := "re: " + content
		if rest, ok := strings.CutPrefix(content, "twice:"); ok {
			text = rest + rest // an answer longer than any message
		}
		s.emit("assistant", map[string]any{"message": map[string]string{"text": text}})
		s.mu.Lock() // like runner, a turn's end is emitted under the lock State takes
		defer s.mu.Unlock()
		if content == "too slow" { // runner cuts a turn past its timeout: no result, a turn_end
			s.emit("cli_exited", map[string]any{"exit_code": 0, "signal": "SIGINT"})
			s.emit("turn_end", map[string]string{"status": "failed", "reason": "timeout"})
		} else {
			s.emit("result", map[string]any{"subtype": "success", "num_turns": 1, "total_cost_usd": 0.01})
			s.emit("turn_end", map[string]string{"status": "succeeded"})
		}
		s.emit("status_change", map[string]string{"status": "idle"})
	}()
	return nil
}

func (s *fakeSession) Sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

func (s *fakeSession) Interrupt() error { return nil }

func (s *fakeSession) SetModel(context.Context, string) (ControlAck, error) {
	return ControlAck{Pending: true}, nil
}

func (s *fakeSession) SetPermissionMode(context.Context, string) (ControlAck, error) {
	return ControlAck{Pending: true}, nil
}

func (s *fakeSession) Answer(id string, d PermissionDecision) error {
	if id != "req-1" {
		return ErrNoSuchPermission
	}
	return nil
}

func (s *fakeSession) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

func (s *fakeSession) Close(ctx context.Context) (SessionSummary, error) {
	s.turns.Wait()
	st := s.State()
	st.Status = StatusClosed
	return SessionSummary{State: st, FilesChanged: 2, Insertions: 10, Deletions: 1, Transcript: "/t.jsonl"}, nil
}

func (s *fakeSession) Shutdown(ctx context.Context) error {
	s.turns.Wait()
	return nil
}

const testToken = "test-token-0123456789"

// bed is a server on a 127.0.0.1 port.
type bed struct {
	t      *testing.T
	s      *Server
	ts     *httptest.Server
	engine *fakeEngine
	cfg    Config
}

func newBed(t *testing.T, mod func(*Config)) *bed {
	t.Helper()
	cfg := Config{Token: testToken, StateDir: t.TempDir(), WorkDir: t.TempDir(), Engine: &fakeEngine{},
		Getenv: func(string) string { return "" }, AuthTimeout: 300 * time.Millisecond}
	cfg.Roots = []string{cfg.WorkDir}
	if mod != nil {
		mod(&cfg)
	}
	return startBed(t, cfg)
}

func startBed(t *testing.T, cfg Config) *bed {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &bed{t: t, s: s, ts: httptest.NewServer(s.Handler()), cfg: cfg}
	b.engine, _ = cfg.Engine.(*fakeEngine)
	t.Cleanup(b.stop)
	return b
}

func (b *bed) stop() {
	if b.ts == nil {
		return
	}
	b.ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.s.Shutdown(ctx); err != nil {
		b.t.Errorf("shutdown: %v", err)
	}
	b.ts = nil
}

// do sends a request with the token and decodes a JSON answer into out.
func (b *bed) do(method, path, body string, out any) *http.Response {
	b.t.Helper()
	return b.doToken(testToken, method, path, body, out)
}

func (b *bed) doToken(token, method, path, body string, out any) *http.Response {
	b.t.Helper()
	var rd *stringsReader
	if body != "" {
		rd = newStringsReader(body)
	}
	req, err := http.NewRequest(method, b.ts.URL+path, rd.reader())
	if err != nil {
		b.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := b.ts.Client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			b.t.Fatalf("%s %s: %d, decode: %v", method, path, resp.StatusCode, err)
		}
	}
	return resp
}

// createSession makes a session and returns its id.
func (b *bed) createSession() string {
	b.t.Helper()
	var o sessionObject
	resp := b.do("POST", "/api/sessions", fmt.Sprintf(`{"repo":%q,"name":"t"}`, b.cfg.WorkDir), &o)
	if resp.StatusCode != http.StatusCreated {
		b.t.Fatalf("create: %d", resp.StatusCode)
	}
	return o.ID
}
