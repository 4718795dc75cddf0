package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// One driver, two front doors: each lifecycle case runs as a job of a jobs
// file and as a server session on the real CLI against the fake API, and
// both must end the same way. A job's attempt is a session's turn: the
// first outcome is the first attempt's (job) or turn's (session), the last
// is the job's result or the session's last turn (and its Close summary).

// door is one run of a case: its fake API and what the script may do.
type door struct {
	mu      sync.Mutex
	calls   int
	started chan struct{} // closed at the first API call: the turn runs
	once    sync.Once
	// configDir is the CLI's config directory (its transcripts).
	configDir string
}

func (d *door) call() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return d.calls
}

func (d *door) setConfigDir(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.configDir = dir
}

func (d *door) config() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.configDir
}

func (d *door) signal() { d.once.Do(func() { close(d.started) }) }

// lifecycleCase is one row of the table.
type lifecycleCase struct {
	name string
	// fields are job fields, the same JSON for a jobs file (a YAML flow
	// map) and a session request; jobFields are a job's only.
	fields, jobFields string
	env               []claudetest.EnvOption
	script            func(d *door, r *fakeapi.Request) fakeapi.Response
	// stop: stop the job's run (cancel) or Close the session while the
	// first turn runs. resend: a second message for the session (a job
	// retries with ContinuePrompt instead).
	stop, resend bool
	first, last  string // "status/reason"
	// within bounds the whole case: a clock that did not fire fails it.
	within time.Duration
}

const bypass = `"permission_mode":"bypassPermissions","env":{"IS_SANDBOX":"1"}`

// sleepy runs a 30 s Bash call, then answers.
func sleepy(d *door, r *fakeapi.Request) fakeapi.Response {
	if r.HasToolResult() {
		return fakeapi.Text("slept")
	}
	d.signal()
	return fakeapi.ToolUse(fakeapi.Bash("sleep 30"))
}

func lifecycleCases() []lifecycleCase {
	usageReset := func() time.Time { return time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second) }
	return []lifecycleCase{
		{name: "timeout", fields: bypass + `,"timeout":"3s"`, script: sleepy,
			first: "failed/timeout", last: "failed/timeout", within: 25 * time.Second},
		{name: "idle timeout", fields: bypass + `,"idle_timeout":"2s"`, script: sleepy,
			first: "failed/idle_timeout", last: "failed/idle_timeout", within: 25 * time.Second},
		{name: "usage limit held then continued", fields: `"model":"sonnet"`, env: subscription,
			script: func(d *door, r *fakeapi.Request) fakeapi.Response {
				if d.call() == 1 {
					return fakeapi.UsageLimit(usageReset())
				}
				return fakeapi.Text("continued")
			},
			first: "failed/usage_limit", last: "succeeded/", within: time.Minute},
		{name: "529 storm", fields: `"model":"sonnet"`, env: []claudetest.EnvOption{claudetest.WithMaxRetries(2)},
			script: func(d *door, r *fakeapi.Request) fakeapi.Response {
				return fakeapi.Error(529, "overloaded_error", "Overloaded")
			},
			first: "failed/api_error", last: "failed/api_error", within: time.Minute},
		{name: "policy deny", fields: bypass + `,"policy":{"deny":["Bash(rm:*)"]}`,
			script: func(d *door, r *fakeapi.Request) fakeapi.Response {
				if r.HasToolResult() {
					return fakeapi.Text("denied: " + r.ToolResults()[0].Content)
				}
				return fakeapi.ToolUse(fakeapi.Bash("rm -rf precious"))
			},
			first: "succeeded/", last: "succeeded/", within: time.Minute},
		{name: "stop ladder", fields: `"model":"sonnet"`, stop: true,
			script: func(d *door, r *fakeapi.Request) fakeapi.Response {
				d.signal()
				return fakeapi.Text("too late").WithDelay(30 * time.Second)
			},
			first: "interrupted/interrupted", last: "interrupted/interrupted", within: 30 * time.Second},
		{name: "crash and resume", fields: `"model":"sonnet"`, jobFields: `"retries":1`, resend: true,
			script: func(d *door, r *fakeapi.Request) fakeapi.Response {
				switch d.call() {
				case 1:
					return fakeapi.ToolUse(fakeapi.Bash("true"))
				case 2:
					// Killed once its transcript holds the turn, so that
					// there is a CLI session to resume.
					poll.Until(10*time.Second, func() bool { return transcriptHolds(d.config(), "tool_result") })
					killCLIIn(r.WorkingDir())
					return fakeapi.Hang()
				}
				if r.Contains("first words") {
					return fakeapi.Text("resumed")
				}
				return fakeapi.Text("lost the session")
			},
			first: "failed/no_result", last: "succeeded/", within: time.Minute},
	}
}

func TestLifecycleJobAndSession(t *testing.T) {
	for _, c := range lifecycleCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Run("job", func(t *testing.T) { checkOutcome(t, c, runCaseAsJob(t, c)) })
			t.Run("session", func(t *testing.T) { checkOutcome(t, c, runCaseAsSession(t, c)) })
		})
	}
}

// caseOutcome is what a front door reports.
type caseOutcome struct {
	first, last string
	took        time.Duration
	sessions    []string // the CLI sessions of the attempts or turns, first and last
	denied      bool     // the audit log holds a denial
}

func checkOutcome(t *testing.T, c lifecycleCase, got caseOutcome) {
	t.Helper()
	if got.first != c.first || got.last != c.last {
		t.Errorf("outcome first %s, last %s; want %s, %s", got.first, got.last, c.first, c.last)
	}
	if got.took > c.within {
		t.Errorf("took %s, want within %s", got.took, c.within)
	}
	if c.name == "policy deny" && !got.denied {
		t.Error("no denial in the audit log")
	}
	if (c.resend || strings.HasPrefix(c.name, "usage limit")) && (len(got.sessions) != 2 || got.sessions[0] == "" || got.sessions[0] != got.sessions[1]) {
		t.Errorf("did not continue its CLI session: %q", got.sessions)
	}
}

func outcomeOf(status, reason string) string { return status + "/" + reason }

func runCaseAsJob(t *testing.T, c lifecycleCase) caseOutcome {
	d := &door{started: make(chan struct{})}
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return c.script(d, r) })
	env := claudetest.NewEnv(t, api.URL, c.env...)
	d.setConfigDir(env.ConfigDir)
	repo := claudetest.GitRepo(t)
	fields := c.fields
	if c.jobFields != "" {
		fields += "," + c.jobFields
	}
	jobs := fmt.Sprintf("version: 1\njobs:\n  - {\"name\":\"case\",\"prompt\":\"first words\",%s}\n", fields)
	path := filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := jobfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.BuildPlan(context.Background(), f, runner.PlanOptions{RunID: "e2e", Binary: claudetest.Binary(t),
		Stagger: -1, Getenv: envGetter(env.Environ()), IsRoot: os.Geteuid() == 0})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	if c.stop {
		go func() {
			select {
			case <-d.started:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	start := time.Now()
	rep, err := runner.Run(ctx, p, runner.Options{Environ: env.Environ(), StopGrace: 500 * time.Millisecond, RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Jobs[0]
	out := caseOutcome{last: outcomeOf(res.Status, res.Reason), took: time.Since(start)}
	if len(res.Attempts) > 0 {
		a := res.Attempts[0]
		out.first = outcomeOf(a.Status, a.Reason)
		out.sessions = []string{a.SessionID, res.Attempts[len(res.Attempts)-1].SessionID}
	}
	out.denied = res.ToolDenials > 0 && auditDenies(t, res.Audit)
	if t.Failed() || out.last != c.last {
		t.Logf("job result: %+v", res)
	}
	return out
}

func runCaseAsSession(t *testing.T, c lifecycleCase) caseOutcome {
	d := &door{started: make(chan struct{})}
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return c.script(d, r) })
	env := claudetest.NewEnv(t, api.URL, c.env...)
	d.setConfigDir(env.ConfigDir)
	repo := claudetest.GitRepo(t)
	ev := &events{}
	start := time.Now()
	s := openSession(t, env, repo, "{"+c.fields+"}", ev)
	if err := s.Send("first words"); err != nil {
		t.Fatal(err)
	}
	var sessions []string
	if c.stop {
		select {
		case <-d.started:
		case <-time.After(time.Minute):
			t.Fatal("the turn never reached the API")
		}
	} else {
		ev.wait(t, "turn_end", "")
		sessions = append(sessions, s.State().CLISessionID)
	}
	if c.resend {
		if err := s.Send("and now?"); err != nil {
			t.Fatal(err)
		}
	}
	if strings.HasPrefix(c.name, "usage limit") || c.resend {
		poll.Eventually(t, time.Minute, func() bool { return ev.count("turn_end") >= 2 }, "no second turn; events:\n%s", ev)
		sessions = append(sessions, s.State().CLISessionID)
	}
	sum, err := s.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(c.name, "usage limit") && ev.count("usage_limit_wait") != 1 {
		t.Errorf("%d usage_limit_wait events, want 1 (the session is held like a job)", ev.count("usage_limit_wait"))
	}
	turns := turnEnds(t, ev)
	out := caseOutcome{took: time.Since(start), sessions: sessions, last: outcomeOf(sum.Status, sum.Reason)}
	if len(turns) > 0 {
		out.first = turns[0]
		if l := turns[len(turns)-1]; l != out.last {
			t.Errorf("the last turn ended %s, the session's summary says %s", l, out.last)
		}
	}
	out.denied = auditDenies(t, filepath.Join(filepath.Dir(sum.Patch), "audit.jsonl"))
	if t.Failed() || out.last != c.last {
		t.Logf("summary %+v; events:\n%s", sum, ev)
	}
	return out
}

// turnEnds are the outcomes of a session's turn_end events.
func turnEnds(t *testing.T, ev *events) []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []string
	for _, e := range ev.all {
		if e.Type != "turn_end" {
			continue
		}
		var to runner.TurnOutcome
		if err := json.Unmarshal(e.Data, &to); err != nil {
			t.Fatal(err)
		}
		out = append(out, outcomeOf(to.Status, to.Reason))
	}
	return out
}

// auditDenies reports whether an audit log holds a denied call.
func auditDenies(t *testing.T, path string) bool {
	if _, err := os.Stat(path); path == "" || err != nil {
		return false // no call was audited
	}
	for _, l := range claudetest.ReadJSONL(t, path) {
		if l["decision"] == "deny" {
			return true
		}
	}
	return false
}

// transcriptHolds reports whether a transcript under configDir holds s.
func transcriptHolds(configDir, s string) bool {
	files, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", "*.jsonl"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// killCLIIn kills the Claude Code CLI working in dir, as a crash would.
func killCLIIn(dir string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || cwd != dir {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmd), "claude") {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				panic(err)
			}
		}
	}
}
