package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// events records a session's events for a test.
type events struct {
	mu  sync.Mutex
	all []runner.SessionEvent
}

func (e *events) add(ev runner.SessionEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// wait returns the first event of typ whose data contains sub, waiting up to a minute.
func (e *events) wait(t *testing.T, typ, sub string) runner.SessionEvent {
	t.Helper()
	return e.waitFrom(t, 0, typ, sub)
}

// len is how many events came so far: a mark for waitFrom.
func (e *events) len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.all)
}

// waitFrom is wait among the events after the first from.
func (e *events) waitFrom(t *testing.T, from int, typ, sub string) runner.SessionEvent {
	t.Helper()
	var found runner.SessionEvent
	poll.Eventually(t, time.Minute, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.all[from:] {
			if ev.Type == typ && strings.Contains(string(ev.Data), sub) {
				found = ev
				return true
			}
		}
		return false
	}, "no %s event containing %q; events:\n%s", typ, sub, e)
	return found
}

func (e *events) count(typ string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, ev := range e.all {
		b.WriteString(ev.Type + " " + string(ev.Data) + "\n")
	}
	return b.String()
}

func openSession(t *testing.T, env *claudetest.Env, repo, body string, ev *events) *runner.Session {
	t.Helper()
	spec, err := jobfile.DecodeSession([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	s, err := runner.OpenSession(context.Background(), spec, runner.SessionOptions{
		ID: "s1", Dir: runner.StateDir(t.TempDir()).Session("s1"), WorkDir: repo, Roots: []string{repo},
		Binary: claudetest.Binary(t), Environ: env.Environ(), OnEvent: ev.add, StopGrace: 500 * time.Millisecond,
		IsRoot: os.Geteuid() == 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s.Close(context.Background()) })
	return s
}

// A session of two turns with a permission answered by its client: the
// second request carries the first turn, cost and turns add up, and after
// Close the session's branch holds the work.
func TestSessionTurnsAndPermission(t *testing.T) {
	repo := claudetest.GitRepo(t)
	var wt string
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		switch {
		case strings.Contains(r.Text(), "second turn"):
			if !r.Contains("first turn") {
				return fakeapi.Text("the first turn is missing")
			}
			return fakeapi.Text("second answer").WithUsage(fakeapi.Usage{Input: 100, Output: 10})
		case r.HasToolResult():
			return fakeapi.Text("wrote it").WithUsage(fakeapi.Usage{Input: 100, Output: 10})
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(wt, "hello.txt"), "hello\n")).WithUsage(fakeapi.Usage{Input: 100, Output: 10})
	})
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{"name":"greeter","permission_prompt":"client"}`, ev)
	wt = s.State().Worktree
	if s.State().Status != runner.SessionIdle || !strings.HasPrefix(s.State().Branch, "pneuma/session/") {
		t.Fatalf("state after open: %+v", s.State())
	}

	if err := s.Send("first turn: write hello.txt"); err != nil {
		t.Fatal(err)
	}
	req := ev.wait(t, "permission_request", `"tool_name":"Write"`)
	var pr runner.PendingPermission
	if err := json.Unmarshal(req.Data, &pr); err != nil || pr.RequestID == "" {
		t.Fatalf("permission_request %s: %v", req.Data, err)
	}
	if st := s.State(); st.Status != runner.SessionWaiting || len(st.PendingPermissions) != 1 {
		t.Fatalf("while waiting: %s, %d pending", st.Status, len(st.PendingPermissions))
	}
	if err := s.Answer(pr.RequestID, runner.PermissionDecision{Behavior: "allow"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Answer(pr.RequestID, runner.PermissionDecision{Behavior: "deny"}); err != runner.ErrPermissionResolved {
		t.Fatalf("second answer: %v, want ErrPermissionResolved", err)
	}
	ev.wait(t, "permission_resolved", `"by":"client"`)
	ev.wait(t, "result", `"result":"wrote it"`)
	ev.wait(t, "content_update", `"hello.txt"`)

	if err := s.Send("second turn"); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, "result", `"result":"second answer"`)
	st := s.State()
	if st.NumTurns < 3 || st.CostUSD <= 0 || st.MessageCount != 2 || st.CLISessionID == "" || st.Usage.OutputTokens == 0 {
		t.Fatalf("accounting after two turns: %+v", st)
	}
	if n := ev.count("cli_started"); n != 1 {
		t.Fatalf("%d CLI starts for two turns, want 1 process across turns", n)
	}

	sum, err := s.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.FilesChanged != 1 || sum.Insertions != 1 || sum.State.Status != runner.SessionClosed || sum.Transcript == "" {
		t.Fatalf("summary: %+v", sum)
	}
	out, err := exec.Command("git", "-C", repo, "show", st.Branch+":hello.txt").Output()
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("branch %s holds %q (%v)", st.Branch, out, err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the clean worktree is still there: %v", err)
	}
	if err := s.Send("too late"); err != runner.ErrSessionClosed {
		t.Fatalf("send after close: %v", err)
	}
	audit, _ := os.ReadFile(filepath.Join(filepath.Dir(sum.Patch), "audit.jsonl"))
	if !strings.Contains(string(audit), `"rule":"client"`) {
		t.Fatalf("audit.jsonl does not say the client decided:\n%s", audit)
	}
}

// Deny, allow with an edited input (the edit is what runs), and no answer
// (denied when permission_timeout passes); then an interrupt mid-turn leaves
// the session usable for the next message.
func TestSessionPermissionOutcomesAndInterrupt(t *testing.T) {
	repo := claudetest.GitRepo(t)
	var wt string
	slow := make(chan struct{}) // closed when the slow request reaches the fake API
	var slowOnce sync.Once
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		text := r.Text()
		switch {
		case r.HasToolResult():
			res := r.ToolResults()[0]
			return fakeapi.Text("tool said: " + res.Content)
		case strings.Contains(text, "after"): // its request also holds the interrupted prompt
			return fakeapi.Text("still here")
		case strings.Contains(text, "slow"):
			slowOnce.Do(func() { close(slow) })
			return fakeapi.Text("slow words come here").WithDelay(20 * time.Second)
		}
		name := strings.Fields(text)[0] + ".txt"
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(wt, name), "x\n"))
	})
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{"permission_prompt":"client","permission_timeout":"1s"}`, ev)
	wt = s.State().Worktree
	answer := func(decision runner.PermissionDecision) (mark int) {
		t.Helper()
		mark = ev.len()
		n := ev.count("permission_request")
		_ = s.Send(strings.TrimSuffix(decision.Message, "!") + " please")
		poll.Eventually(t, time.Minute, func() bool { return ev.count("permission_request") > n }, "no permission request")
		if decision.Behavior == "" {
			return mark // let it time out
		}
		pending := s.State().PendingPermissions
		if len(pending) != 1 {
			t.Fatalf("%d pending permission requests", len(pending))
		}
		if err := s.Answer(pending[0].RequestID, decision); err != nil {
			t.Fatal(err)
		}
		return mark
	}
	m := answer(runner.PermissionDecision{Behavior: "deny", Message: "denied!"})
	ev.waitFrom(t, m, "result", "tool said: denied")
	edited, _ := json.Marshal(map[string]string{"file_path": filepath.Join(wt, "edited.txt"), "content": "edited\n"})
	m = answer(runner.PermissionDecision{Behavior: "allow", UpdatedInput: edited, Message: "allowed!"})
	ev.waitFrom(t, m, "result", "tool said: ")
	if b, err := os.ReadFile(filepath.Join(wt, "edited.txt")); err != nil || string(b) != "edited\n" {
		t.Fatalf("the edited input did not run: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(wt, "allowed.txt")); !os.IsNotExist(err) {
		t.Fatal("the original input ran instead of the edited one")
	}
	m = answer(runner.PermissionDecision{Message: "timeout!"})
	ev.waitFrom(t, m, "permission_resolved", `"by":"timeout"`)
	ev.waitFrom(t, m, "result", "No one answered this permission request")

	_ = s.Send("slow answer")
	select { // the request is in flight at the fake API
	case <-slow:
	case <-time.After(time.Minute):
		t.Fatal("the slow request never reached the fake API")
	}
	if err := s.Interrupt(); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, "result", `"subtype":"error_during_execution"`)
	ev.wait(t, "turn_end", `"status":"interrupted"`)
	_ = s.Send("after the interrupt")
	ev.wait(t, "result", `"result":"still here"`)
	if n := ev.count("cli_started"); n != 1 {
		t.Fatalf("%d CLI starts: an interrupt must not end the process", n)
	}
}

// After a server stop (Shutdown) a restored session resumes its CLI
// session; a resume the CLI rejects starts a fresh one and says so.
func TestSessionRestore(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if strings.Contains(r.Text(), "remember") {
			if r.Contains("the word is kiwi") {
				return fakeapi.Text("kiwi")
			}
			return fakeapi.Text("I have no earlier turn")
		}
		return fakeapi.Text("noted")
	})
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{}`, ev)
	_ = s.Send("the word is kiwi")
	ev.wait(t, "result", `"result":"noted"`)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	saved := s.State()
	if saved.Status != runner.SessionIdle || saved.CLISessionID == "" {
		t.Fatalf("state after shutdown: %+v", saved)
	}
	if _, err := os.Stat(saved.Worktree); err != nil {
		t.Fatalf("shutdown removed the worktree: %v", err)
	}

	reopen := func(st runner.SessionState) (*runner.Session, *events) {
		ev := &events{}
		s, err := runner.OpenSession(context.Background(), nil, runner.SessionOptions{
			ID: "s1", Dir: runner.StateDir(t.TempDir()).Session("s1"), WorkDir: repo, Binary: claudetest.Binary(t),
			Environ: env.Environ(), OnEvent: ev.add, StopGrace: 500 * time.Millisecond, Restore: &st,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = s.Close(context.Background()) })
		return s, ev
	}
	s2, ev2 := reopen(saved)
	_ = s2.Send("remember the word?")
	ev2.wait(t, "result", `"result":"kiwi"`)
	if st := s2.State(); st.CLISessionID != saved.CLISessionID || st.CostUSD <= saved.CostUSD {
		t.Fatalf("restored session: id %s (was %s), cost %v (was %v)", st.CLISessionID, saved.CLISessionID, st.CostUSD, saved.CostUSD)
	}
	if err := s2.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The CLI's transcript is gone: its resume fails, and a fresh session answers.
	gone := s2.State()
	files, _ := filepath.Glob(filepath.Join(env.ConfigDir, "projects", "*", gone.CLISessionID+".jsonl"))
	if len(files) == 0 {
		t.Fatal("no transcript to delete")
	}
	for _, f := range files {
		_ = os.Remove(f)
	}
	s3, ev3 := reopen(gone)
	_ = s3.Send("remember the word?")
	ev3.wait(t, "error", `"code":"resume_failed"`)
	ev3.wait(t, "result", `"result":"I have no earlier turn"`)
	if st := s3.State(); st.CLISessionID == gone.CLISessionID || st.CLISessionID == "" {
		t.Fatalf("after a failed resume the CLI session is %q (was %q)", st.CLISessionID, gone.CLISessionID)
	}
}

// While a message starts the CLI (a second or so of node and the control
// handshake) the session answers State at once, showing "starting", and a
// Close in the meantime stops the CLI that start made.
func TestSessionStateDuringStart(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("hi") })
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{"name":"starter","permission_prompt":"client"}`, ev)
	sent := make(chan error, 1)
	go func() { sent <- s.Send("hello") }()
	if !poll.Until(30*time.Second, func() bool { return s.State().Status == runner.SessionStarting }) {
		t.Fatalf("State never showed the start in progress: %+v", s.State())
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	ev.wait(t, "result", "")
	// A second session, closed while its CLI starts.
	ev2 := &events{}
	s2 := openSession(t, env, claudetest.GitRepo(t), `{"name":"closer","permission_prompt":"client"}`, ev2)
	go func() { sent <- s2.Send("hello") }()
	poll.Until(30*time.Second, func() bool { return s2.State().Status == runner.SessionStarting })
	if _, err := s2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := <-sent
	pid := s2.State().CLIPid
	if err != nil && !errors.Is(err, runner.ErrSessionClosed) {
		t.Fatalf("send during close: %v", err)
	}
	if pid != 0 {
		t.Errorf("closed session still names CLI pid %d", pid)
	}
	if n := ev2.count("cli_started"); n != ev2.count("cli_exited") {
		t.Errorf("%d CLIs started, %d exited: %s", n, ev2.count("cli_exited"), ev2)
	}
}

// A closed session's clean worktree is parked in the repository's pool, as
// a finished job's is, and the next session takes it from there.
func TestSessionWorktreeFromPool(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("hi") })
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{}`, ev)
	_ = s.Send("hello")
	ev.wait(t, "turn_end", `"status":"succeeded"`)
	first := s.State().Worktree
	if _, err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	spares := runner.RepoLayout(repo).Spares()
	if len(spares) != 1 {
		t.Fatalf("spares after Close: %q", spares)
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Fatalf("the closed session's worktree %s is still there: %v", first, err)
	}
	s2, err := runner.OpenSession(context.Background(), mustSpec(t, `{}`), runner.SessionOptions{
		ID: "s2", Dir: runner.StateDir(t.TempDir()).Session("s2"), WorkDir: repo, Binary: claudetest.Binary(t),
		Environ: env.Environ(), StopGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = s2.Close(context.Background()) })
	if left := runner.RepoLayout(repo).Spares(); len(left) != 0 {
		t.Fatalf("the next session did not take the spare: %q", left)
	}
	wt := s2.State().Worktree
	if got := strings.TrimSpace(claudetest.Git(t, wt, "branch", "--show-current")); got != "pneuma/session/s2" {
		t.Fatalf("the reused worktree is on %q", got)
	}
}

func mustSpec(t *testing.T, body string) *jobfile.Session {
	t.Helper()
	spec, err := jobfile.DecodeSession([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// Sessions that share a gate share a usage limit's hold: the limit one
// session meets holds the next CLI start of another until the reset, as
// it holds the other jobs of a run.
func TestSessionsShareAUsageLimitHold(t *testing.T) {
	repo := claudetest.GitRepo(t)
	// The reset is a few seconds after the limit is answered, not after the
	// test starts: on a loaded machine the CLI may take longer than that to
	// ask, and a reset already past is no limit to the CLI.
	var mu sync.Mutex
	var reset time.Time
	limited, otherAt := false, time.Time{}
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if r.Contains("other") {
			if otherAt.IsZero() {
				otherAt = time.Now()
			}
			return fakeapi.Text("other done")
		}
		if !limited {
			limited = true
			reset = time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
			return fakeapi.UsageLimit(reset)
		}
		return fakeapi.Text("held one done")
	})
	env := claudetest.NewEnv(t, api.URL, subscription...)
	gate := runner.NewSharedGate(0, nil)
	open := func(id string, ev *events) *runner.Session {
		s, err := runner.OpenSession(context.Background(), mustSpec(t, `{}`), runner.SessionOptions{
			ID: id, Dir: runner.StateDir(t.TempDir()).Session(id), WorkDir: repo, Binary: claudetest.Binary(t),
			Environ: env.Environ(), OnEvent: ev.add, StopGrace: 500 * time.Millisecond, Gate: gate,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = s.Close(context.Background()) })
		return s
	}
	evA, evB := &events{}, &events{}
	a, b := open("held", evA), open("other", evB)
	_ = a.Send("first")
	evA.wait(t, "usage_limit_wait", "")
	_ = b.Send("other words")
	evB.wait(t, "turn_end", `"status":"succeeded"`)
	evA.wait(t, "turn_end", `"status":"succeeded"`)
	mu.Lock()
	defer mu.Unlock()
	if otherAt.Before(reset) {
		t.Errorf("the other session's CLI asked the API at %v, before the reset %v", otherAt, reset)
	}
}

// TestRealCLISessionTurnRefused: a turn the model refuses ends failed with
// reason refusal (turn_end and last_turn), and the session goes on: the
// next message is answered by the same CLI.
func TestRealCLISessionTurnRefused(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		// The CLI asks once more after a refusal, with a note of its own.
		if text := r.Text(); strings.Contains(text, "refuse this") || strings.Contains(text, "safety classifier") {
			return fakeapi.Text("I can't help with that.").WithStopReason("refusal")
		}
		return fakeapi.Text("glad to help")
	})
	env := claudetest.NewEnv(t, api.URL)
	ev := &events{}
	s := openSession(t, env, repo, `{"name":"refused"}`, ev)
	if err := s.Send("refuse this"); err != nil {
		t.Fatal(err)
	}
	end := ev.wait(t, "turn_end", `"status":"failed"`)
	var turn runner.TurnOutcome
	if err := json.Unmarshal(end.Data, &turn); err != nil {
		t.Fatal(err)
	}
	if turn.Reason != "refusal" || !strings.HasPrefix(turn.Error, "the model refused") {
		t.Fatalf("turn_end %s, want reason refusal and an error saying the model refused", end.Data)
	}
	if lt := s.State().LastTurn; lt == nil || lt.Reason != "refusal" {
		t.Fatalf("last_turn %+v, want reason refusal", lt)
	}
	mark := ev.len()
	if err := s.Send("second turn"); err != nil {
		t.Fatal(err)
	}
	ev.waitFrom(t, mark, "result", `"result":"glad to help"`)
	ev.waitFrom(t, mark, "turn_end", `"status":"succeeded"`)
	if n := ev.count("cli_started"); n != 1 {
		t.Errorf("%d CLI starts, want the refused turn's CLI to answer the next message", n)
	}
}
