package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// wsClient is a WebSocket client that keeps every message it reads.
type wsClient struct {
	t    *testing.T
	c    *websocket.Conn
	mu   sync.Mutex
	msgs []map[string]any
	err  error
	seen int // messages await has passed
	done chan struct{}
}

// follow connects to a session's WebSocket and subscribes after lastSeq.
func (s *server) follow(ctx context.Context, path string, lastSeq int64) *wsClient {
	s.t.Helper()
	w := &wsClient{t: s.t, c: s.dial(ctx, path), done: make(chan struct{})}
	wsSend(s.t, ctx, w.c, map[string]any{"type": "subscribe", "last_seq": lastSeq})
	go func() {
		defer close(w.done)
		for {
			_, data, err := w.c.Read(ctx)
			w.mu.Lock()
			if err != nil {
				w.err = err
				w.mu.Unlock()
				return
			}
			var m map[string]any
			_ = json.Unmarshal(data, &m)
			w.msgs = append(w.msgs, m)
			w.mu.Unlock()
			s.notePIDs([]map[string]any{m})
		}
	}()
	s.t.Cleanup(func() { w.c.CloseNow(); <-w.done })
	return w
}

// await returns the next message of typ containing sub after those awaited
// before, waiting up to 90 seconds.
func (w *wsClient) await(typ, sub string) map[string]any {
	w.t.Helper()
	var found map[string]any
	var err error
	poll.Until(90*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := w.seen; i < len(w.msgs); i++ {
			m := w.msgs[i]
			if b, _ := json.Marshal(m); m["type"] == typ && strings.Contains(string(b), sub) {
				w.seen, found = i+1, m
				return true
			}
		}
		err = w.err
		return err != nil
	})
	if found == nil {
		w.t.Fatalf("no %s message with %q (%v); got:\n%s", typ, sub, err, dump(w.all()))
	}
	return found
}

// awaitAll waits for a message of each (type, substring) pair after those
// already seen, in any order (a reply and the event it caused race to the
// socket).
func (w *wsClient) awaitAll(want ...[2]string) {
	w.t.Helper()
	var err error
	done := poll.Until(90*time.Second, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		last := w.seen
		for _, tw := range want {
			i := slices.IndexFunc(w.msgs[w.seen:], func(m map[string]any) bool {
				b, _ := json.Marshal(m)
				return m["type"] == tw[0] && strings.Contains(string(b), tw[1])
			})
			if i < 0 {
				err = w.err
				return err != nil
			}
			last = max(last, w.seen+i+1)
		}
		w.seen = last
		return true
	})
	if !done || err != nil {
		w.t.Fatalf("no messages %q (%v); got:\n%s", want, err, dump(w.all()))
	}
}

func (w *wsClient) all() []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.msgs...)
}

// events is the messages that are events (replies such as
// message_accepted have a seq but no time).
func (w *wsClient) events() []map[string]any {
	var out []map[string]any
	for _, m := range w.all() {
		if _, isEvent := m["time"]; isEvent && seqOf(m) > 0 {
			out = append(out, m)
		}
	}
	return out
}

func (w *wsClient) send(ctx context.Context, v any) { w.t.Helper(); wsSend(w.t, ctx, w.c, v) }

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// A session of two turns over HTTP: the second request to the API carries
// the first turn, the session object counts cost and turns, and after
// DELETE the session's branch holds the work.
func TestE2ETwoTurns(t *testing.T) {
	repo := claudetest.GitRepo(t)
	u := fakeapi.Usage{Input: 1000, Output: 100}
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		switch {
		case strings.Contains(r.Text(), "second turn"):
			if !r.Contains("first turn") {
				return fakeapi.Text("the first turn is missing")
			}
			return fakeapi.Text("second answer").WithUsage(u)
		case r.HasToolResult():
			return fakeapi.Text("wrote it").WithUsage(u)
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(r.WorkingDir(), "hello.txt"), "hello\n")).WithUsage(u)
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo, "name": "greeter", "permission_mode": "acceptEdits"}))
	if o.Status != "idle" || o.Branch != "pneuma/session/"+o.ID {
		t.Fatalf("created: %+v", o)
	}
	var turn struct {
		Seq    int64             `json:"seq"`
		Events []json.RawMessage `json:"events"`
		Result struct {
			Result       string  `json:"result"`
			NumTurns     int     `json:"num_turns"`
			TotalCostUSD float64 `json:"total_cost_usd"`
		} `json:"result"`
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"first turn: write hello.txt","wait":true}`, &turn)
	if turn.Result.Result != "wrote it" {
		t.Fatalf("first turn: %+v", turn)
	}
	first := turn.Result
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"second turn","wait":true}`, &turn)
	if turn.Result.Result != "second answer" {
		t.Fatalf("second turn: %+v", turn.Result)
	}
	got := s.waitStatus(o.ID, "idle")
	if got.MessageCount != 2 || got.NumTurns != first.NumTurns+turn.Result.NumTurns || got.NumTurns != 3 {
		t.Errorf("after two turns (of %d and %d CLI turns): %d messages, %d turns", first.NumTurns, turn.Result.NumTurns, got.MessageCount, got.NumTurns)
	}
	if got.CostUSD <= first.TotalCostUSD || got.CostUSD != turn.Result.TotalCostUSD {
		t.Errorf("cost %v after two turns; the results said %v then %v", got.CostUSD, first.TotalCostUSD, turn.Result.TotalCostUSD)
	}
	if n := countType(s.events(o.ID), "cli_started"); n != 1 {
		t.Errorf("%d CLI starts for two turns, want one process", n)
	}

	var closed session
	s.must(200, "DELETE", "/api/sessions/"+o.ID, nil, &closed)
	if closed.Status != "closed" || closed.FilesChanged == nil || *closed.FilesChanged != 1 || *closed.Insertions != 1 {
		t.Fatalf("closed session: %+v", closed)
	}
	out, err := exec.Command("git", "-C", repo, "show", o.Branch+":hello.txt").Output()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("branch %s holds %q (%v)", o.Branch, out, err)
	}
	if code, _ := s.do("POST", "/api/sessions/"+o.ID+"/messages", `{"content":"too late"}`); code != 409 {
		t.Errorf("a message to a closed session: %d, want 409", code)
	}
}

func countType(evs []map[string]any, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev["type"] == typ {
			n++
		}
	}
	return n
}

// stateDir is the server's --state-dir.
func (s *server) stateDir() string {
	for i, a := range s.args {
		if a == "--state-dir" {
			return s.args[i+1]
		}
	}
	return ""
}

// Permission prompts answered by WebSocket clients: allow, deny, allow with
// an edited input, no answer (denied by the timeout); two clients answering
// the same request at once: one wins, the other gets an error; audit.jsonl
// says who decided.
func TestE2EPermissions(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("tool said: " + r.ToolResults()[0].Content)
		}
		m := pleaseRE.FindStringSubmatch(r.Text())
		if m == nil {
			return fakeapi.Text("no word")
		}
		name := m[1] + ".txt"
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(r.WorkingDir(), name), "x\n"))
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo, "permission_prompt": "client", "permission_timeout": "2s"}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	path := "/api/sessions/" + o.ID + "/ws"
	a, b := s.follow(ctx, path, 0), s.follow(ctx, path, 0)

	ask := func(word string) string {
		t.Helper()
		a.send(ctx, map[string]any{"type": "user_message", "content": word + " please"})
		a.await("message_accepted", "")
		req := a.await("permission_request", word+".txt")
		b.await("permission_request", word+".txt")
		return req["request_id"].(string)
	}

	// Both clients allow at once: exactly one is accepted.
	id := ask("allowed")
	var wg sync.WaitGroup
	for _, c := range []*wsClient{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.c.Write(ctx, websocket.MessageText, []byte(jsonString(map[string]any{"type": "permission_response", "request_id": id, "behavior": "allow"})))
		}()
	}
	wg.Wait()
	a.await("permission_resolved", `"by":"client"`)
	b.await("permission_resolved", `"by":"client"`)
	// The loser's error may come after the resolution both clients see.
	answers := map[string]int{}
	poll.Until(10*time.Second, func() bool {
		answers = map[string]int{}
		for _, c := range []*wsClient{a, b} {
			for _, m := range c.all() {
				if m["type"] == "permission_accepted" || (m["type"] == "error" && strings.Contains(fmt.Sprint(m["message"]), "answered already")) {
					answers[m["type"].(string)]++
				}
			}
		}
		return answers["permission_accepted"]+answers["error"] >= 2
	})
	if answers["permission_accepted"] != 1 || answers["error"] != 1 {
		t.Fatalf("two clients answering at once: %v, want one accepted and one error", answers)
	}
	a.await("result", "tool said: ")
	wt := o.Worktree
	if _, err := os.Stat(filepath.Join(wt, "allowed.txt")); err != nil {
		t.Fatalf("the allowed call did not run: %v", err)
	}

	id = ask("denied")
	b.send(ctx, map[string]any{"type": "permission_response", "request_id": id, "behavior": "deny", "message": "not that one"})
	b.await("permission_accepted", id)
	a.await("result", "tool said: not that one")
	if _, err := os.Stat(filepath.Join(wt, "denied.txt")); !os.IsNotExist(err) {
		t.Fatalf("the denied call ran: %v", err)
	}

	id = ask("original")
	edited := map[string]string{"file_path": filepath.Join(wt, "edited.txt"), "content": "edited\n"}
	a.send(ctx, map[string]any{"type": "permission_response", "request_id": id, "behavior": "allow", "updated_input": edited})
	a.await("result", "tool said: ")
	if data, err := os.ReadFile(filepath.Join(wt, "edited.txt")); err != nil || string(data) != "edited\n" {
		t.Fatalf("the edited input did not run: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(wt, "original.txt")); !os.IsNotExist(err) {
		t.Fatal("the original input ran instead of the edited one")
	}

	ask("ignored")
	a.await("permission_resolved", `"by":"timeout"`)
	a.await("result", "No one answered this permission request")
	s.waitStatus(o.ID, "idle")

	s.must(200, "DELETE", "/api/sessions/"+o.ID, nil, nil)
	checkAudit(t, filepath.Join(s.stateDir(), "sessions", o.ID, "audit.jsonl"), []string{
		`"decision":"allow","rule":"client"`, `"decision":"deny","rule":"client"`,
		`"decision":"allow","rule":"client","via":"can_use_tool","edited":true`, `"decision":"deny","rule":"timeout"`,
	})
}

// pleaseRE finds the word of a prompt "<word> please" (the CLI may put a
// system reminder before it).
var pleaseRE = regexp.MustCompile(`(\w+) please`)

// checkAudit fails unless each of want is in a line of the audit log, in order.
func checkAudit(t *testing.T, path string, want []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && strings.Contains(l, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("audit.jsonl has no line with %s (in order):\n%s", want[i], data)
	}
}

// A turn the model refuses, over HTTP: the waiting message is answered
// with its error result, the turn ends with turn_end reason refusal (the
// server does not retry it), and the session answers the next message.
func TestE2ERefusedTurn(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		// The CLI asks once more after a refusal, with a note of its own.
		if text := r.Text(); strings.Contains(text, "refuse this") || strings.Contains(text, "safety classifier") {
			return fakeapi.Text("I can't help with that.").WithStopReason("refusal")
		}
		return fakeapi.Text("glad to help")
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo, "name": "refused"}))
	var turn struct {
		Seq    int64 `json:"seq"`
		Result struct {
			IsError bool `json:"is_error"`
		} `json:"result"`
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"refuse this","wait":true}`, &turn)
	if !turn.Result.IsError {
		t.Fatalf("a refused turn's result: %+v, want is_error", turn)
	}
	end := s.waitEvent(o.ID, 0, "turn_end", `"status":"failed"`)
	if end["reason"] != "refusal" || !strings.HasPrefix(fmt.Sprint(end["error"]), "the model refused") {
		t.Fatalf("turn_end %v, want reason refusal and an error saying the model refused", end)
	}
	var next struct {
		Result struct {
			Result string `json:"result"`
		} `json:"result"`
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"second turn","wait":true}`, &next)
	if next.Result.Result != "glad to help" {
		t.Fatalf("the turn after a refusal: %+v", next)
	}
	if n := countType(s.events(o.ID), "cli_started"); n != 1 {
		t.Errorf("%d CLI starts, want the refused turn's CLI to answer the next message", n)
	}
	if got := countType(s.events(o.ID), "turn_end"); got != 2 {
		t.Errorf("%d turn_end events for two messages, want 2 (no retry)", got)
	}
}
