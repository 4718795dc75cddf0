package runner_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// These tests drive the real CLI into the newer message kinds of its
// stream (docs/claude-stream.md) and check what pneuma makes of them: the
// report's counts, its warnings and the run's events.

// TestRealCLIAPIRetriesCounted: the API is overloaded twice (529), then
// answers; the CLI retries on its own (two api_retry lines), the job
// succeeds, and its report counts the retries, each an api_retry event.
func TestRealCLIAPIRetriesCounted(t *testing.T) {
	b := newBed(t, claudetest.WithMaxRetries(3)) // its back-off: about 0.5 s, then 1 s
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	calls := 0
	b.jobs["TOKEN-RETRY"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls <= 2 {
			return fakeapi.Error(529, "overloaded_error", "Overloaded")
		}
		return fakeapi.Text("done after the storm")
	}
	evs := &eventLog{}
	rep := b.runWith(b.plan(repo, "version: 1\njobs:\n  - name: retry\n    prompt: TOKEN-RETRY go\n"), runner.Options{Reporter: evs})
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	if j.APIRetries != 2 {
		t.Errorf("api_retries %d, want 2 (two 529s the CLI retried)", j.APIRetries)
	}
	retries := evs.of(runner.EventAPIRetry)
	if len(retries) != 2 {
		t.Fatalf("%d api_retry events, want 2", len(retries))
	}
	for i, ev := range retries {
		if ev.Job != "retry" || ev.Attempt != i+1 || ev.ErrorStatus == nil || *ev.ErrorStatus != 529 || ev.MaxRetries != 3 {
			t.Errorf("api_retry event %d: %+v, want job retry, attempt %d of 3, status 529", i, ev, i+1)
		}
	}
}

// TestRealCLIBackgroundTaskLeftRunning_2_1_332: the agent starts a Bash
// command in the background (run_in_background) that outlives its turn.
// The stream's task lines become background_task events, and the report
// names the task still running at the job's result, with a warning. Older
// CLIs write no task lines for a background shell.
func TestRealCLIBackgroundTaskLeftRunning_2_1_332(t *testing.T) {
	b := newBed(t)
	if !claudetest.AtLeast(t, b.bin, "2.1.332") {
		t.Skip("the CLI writes background_tasks_changed for a background shell from 2.1.332 on (2.1.197 writes none)")
	}
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-BG"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		switch {
		case r.HasToolResult():
			return fakeapi.Text("the server runs in the background")
		case r.IsPrompt():
			return fakeapi.ToolUse(fakeapi.Tool("Bash", map[string]any{
				"command": "sleep 300", "description": "serve forever", "run_in_background": true}))
		}
		return fakeapi.Text("noted") // a task notification, should the task end
	}
	evs := &eventLog{}
	rep := b.runWith(b.plan(repo, "version: 1\njobs:\n  - name: bg\n    prompt: TOKEN-BG start the server\n"), runner.Options{Reporter: evs})
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	if len(j.TasksRunning) != 1 || j.TasksRunning[0].Description != "serve forever" || j.TasksRunning[0].Type != "local_bash" {
		t.Errorf("tasks_running %+v, want the one background shell (serve forever, local_bash)", j.TasksRunning)
	}
	warned := false
	for _, w := range j.Warnings {
		warned = warned || (w.Code == report.WarnTasksRunning && strings.Contains(w.Message, "serve forever"))
	}
	if !warned {
		t.Errorf("warnings %+v, want a tasks_running warning naming the task", j.Warnings)
	}
	started := false
	for _, ev := range evs.of(runner.EventBackgroundTask) {
		started = started || (ev.Job == "bg" && ev.Task != nil && ev.Task.Background && ev.Task.Description == "serve forever")
	}
	if !started {
		t.Errorf("no background_task event for the task's start: %+v", evs.of(runner.EventBackgroundTask))
	}
	stream := readStream(t, j)
	for _, kind := range []string{`"subtype":"task_started"`, `"subtype":"background_tasks_changed"`} {
		if !strings.Contains(stream, kind) {
			t.Errorf("stream.jsonl has no %s line", kind)
		}
	}
}

// TestRealCLICompactBoundary_2_1_332: the job's second prompt is /compact;
// the CLI summarises the conversation (an API call the fake answers) and
// writes a compact_boundary line, which the report counts and a
// compact_boundary event carries (trigger manual). 2.1.197 writes no
// compact_boundary for a /compact that comes on stream-json input.
func TestRealCLICompactBoundary_2_1_332(t *testing.T) {
	b := newBed(t)
	if !claudetest.AtLeast(t, b.bin, "2.1.332") {
		t.Skip("a /compact prompt on stream-json input writes compact_boundary from 2.1.332 on (2.1.197 writes none)")
	}
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-COMPACT"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("a summary of what happened").WithUsage(fakeapi.Usage{Input: 5000, Output: 50})
	}
	evs := &eventLog{}
	rep := b.runWith(b.plan(repo, "version: 1\njobs:\n  - name: compact\n    prompts: [\"TOKEN-COMPACT look around\", \"/compact\"]\n"), runner.Options{Reporter: evs})
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	if j.Compactions != 1 {
		t.Errorf("compactions %d, want 1", j.Compactions)
	}
	got := evs.of(runner.EventCompactBoundary)
	if len(got) != 1 || got[0].Compact == nil || got[0].Compact.Trigger != "manual" || got[0].Job != "compact" || got[0].Message == "" {
		t.Errorf("compact_boundary events %+v, want one, trigger manual, with a message", got)
	}
	if !strings.Contains(readStream(t, j), `"subtype":"compact_boundary"`) {
		t.Error("stream.jsonl has no compact_boundary line")
	}
}

// TestRealCLIHookEvents: with include_hook_events the CLI reports the
// job's hooks (a PreToolUse hook that succeeds, a PostToolUse hook that
// exits 1); each hook line becomes a hook event, and the report counts the
// hooks run and the one that failed. The events carry no hook output.
func TestRealCLIHookEvents(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-HOOKS"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("listed")
		}
		return fakeapi.ToolUse(fakeapi.Bash("echo listing"))
	}
	settings := `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo PRE-HOOK-OUTPUT"}]}],` +
		`"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"exit 1"}]}]}}`
	evs := &eventLog{}
	rep := b.runWith(b.plan(repo, fmt.Sprintf("version: 1\njobs:\n  - name: hooks\n    prompt: TOKEN-HOOKS list\n    include_hook_events: true\n    settings: '%s'\n", settings)),
		runner.Options{Reporter: evs})
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	if j.HookRuns < 2 || j.HookFailures != 1 {
		t.Errorf("hook_runs %d hook_failures %d, want at least 2 run and 1 failed", j.HookRuns, j.HookFailures)
	}
	seen := map[string]runner.Event{}
	for _, ev := range evs.of(runner.EventHook) {
		if ev.Hook == nil || ev.Job != "hooks" {
			t.Fatalf("hook event %+v: no hook or another job", ev)
		}
		seen[ev.Hook.HookName+" "+ev.Hook.Phase] = ev
		if strings.Contains(fmt.Sprintf("%+v", ev), "PRE-HOOK-OUTPUT") {
			t.Errorf("a hook event carries the hook's output: %+v", ev)
		}
	}
	if _, ok := seen["PreToolUse:Bash started"]; !ok {
		t.Errorf("no hook event for PreToolUse:Bash starting; got %v", keys(seen))
	}
	if ev, ok := seen["PreToolUse:Bash response"]; !ok || ev.Status != claude.HookSuccess {
		t.Errorf("PreToolUse:Bash answer %+v, want outcome success", ev)
	}
	if ev, ok := seen["PostToolUse:Bash response"]; !ok || ev.Status != "error" || ev.Hook.ExitCode == nil || *ev.Hook.ExitCode != 1 {
		t.Errorf("PostToolUse:Bash answer %+v, want outcome error, exit 1", ev)
	}
}

func readStream(t *testing.T, j report.Job) string {
	t.Helper()
	data, err := os.ReadFile(j.Stream)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func keys(m map[string]runner.Event) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRealCLISessionWritesLost_2_1_332: the CLI's transcripts go to a full
// disk (a 4 KiB tmpfs over its projects directory, in a mount namespace of
// its own), so it cannot save the session and says so at exit
// (session_writes_lost, ENOSPC). The job still succeeds, with a
// session_writes_lost warning and event: its transcript is incomplete.
func TestRealCLISessionWritesLost_2_1_332(t *testing.T) {
	b := newBed(t)
	if !claudetest.AtLeast(t, b.bin, "2.1.332") {
		t.Skip("the CLI reports lost transcript writes from 2.1.332 on (2.1.197 writes no session_writes_lost on a full disk)")
	}
	b.bin = fullDiskCLI(t, b.bin)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-FULL"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("answered on a full disk")
	}
	evs := &eventLog{}
	rep := b.runWith(b.plan(repo, "version: 1\njobs:\n  - name: full\n    prompt: TOKEN-FULL hello\n"), runner.Options{Reporter: evs})
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	if !strings.Contains(readStream(t, j), `"subtype":"session_writes_lost"`) {
		t.Fatal("the CLI wrote no session_writes_lost line: its transcript did not meet a full disk")
	}
	warned := false
	for _, w := range j.Warnings {
		warned = warned || (w.Code == report.WarnSessionWritesLost && strings.Contains(w.Message, "ENOSPC"))
	}
	if !warned {
		t.Errorf("warnings %+v, want session_writes_lost (ENOSPC)", j.Warnings)
	}
	if got := evs.of(runner.EventWritesLost); len(got) != 1 || got[0].Reason != "ENOSPC" || got[0].Job != "full" {
		t.Errorf("session_writes_lost events %+v, want one for job full, ENOSPC", got)
	}
}

// fullDiskCLI returns an executable that runs the CLI at bin in a mount
// namespace of its own (unshare -rm) where a 4 KiB tmpfs covers its
// projects directory: its transcript writes fail with ENOSPC. Where mount
// namespaces are not allowed the test fails in CI and is skipped elsewhere.
func fullDiskCLI(t *testing.T, bin string) string {
	t.Helper()
	if out, err := exec.Command("unshare", "-rm", "true").CombinedOutput(); err != nil {
		msg := fmt.Sprintf("a full disk needs a mount namespace (unshare -rm): %v %s", err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	wrapper := filepath.Join(t.TempDir(), "claude-on-a-full-disk")
	script := `#!/bin/sh
projects="${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects"
mkdir -p "$projects" || exit 97
exec unshare -rm sh -c 'mount -t tmpfs -o size=4k tmpfs "$0" && exec "$@"' "$projects" ` + "'" + strings.ReplaceAll(bin, "'", `'\''`) + "'" + ` "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestRealCLIRefusalWithoutFallback_2_1_332: offline the CLI arms no
// refusal fallback (docs/claude-stream.md): a model that refuses twice
// makes it write model_refusal_no_fallback, which stream.jsonl keeps;
// the job is not a success, and its report names no fallback and the
// model that refused as the one that served.
func TestRealCLIRefusalWithoutFallback_2_1_332(t *testing.T) {
	b := newBed(t)
	if !claudetest.AtLeast(t, b.bin, "2.1.332") {
		t.Skip("written for 2.1.332, whose default model is claude-opus-5-5")
	}
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-REFUSE"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("I can't help with that.").WithStopReason("refusal")
	}
	rep := b.run(b.plan(repo, "version: 1\njobs:\n  - name: refused\n    prompt: TOKEN-REFUSE do it\n"))
	j := rep.Jobs[0]
	if j.Status == report.StatusSucceeded {
		t.Errorf("a refused job succeeded: %+v", j)
	}
	if j.RefusalFallback != nil {
		t.Errorf("refusal_fallback %+v, want none", j.RefusalFallback)
	}
	if !strings.Contains(readStream(t, j), `"subtype":"model_refusal_no_fallback"`) {
		t.Error("stream.jsonl has no model_refusal_no_fallback line")
	}
	if j.Model != "claude-opus-5-5" {
		t.Errorf("model %q, want the one that refused (claude-opus-5-5)", j.Model)
	}
}

// TestRealCLIRefusalNotRetried: a job the model refuses fails with reason
// refusal after one attempt although it has retries: asked again, the model
// refuses again (README, retries). Its error says so, and the JUnit failure
// a test reporter shows names the refusal.
func TestRealCLIRefusalNotRetried(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-REFUSE"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("I can't help with that.").WithStopReason("refusal")
	}
	rep := b.run(b.plan(repo, "version: 1\njobs:\n  - name: refused\n    retries: 2\n    prompt: TOKEN-REFUSE do it\n"))
	j := rep.Jobs[0]
	if j.Status != report.StatusFailed || j.Reason != report.ReasonRefusal || len(j.Attempts) != 1 {
		t.Fatalf("refused job: %s/%s after %d attempt(s), want failed/refusal after 1: %+v", j.Status, j.Reason, len(j.Attempts), j.Attempts)
	}
	if !strings.HasPrefix(j.Error, "the model refused") {
		t.Errorf("error %q does not say the model refused", j.Error)
	}
	var junit strings.Builder
	if err := report.WriteJUnit(&junit, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `type="refusal"`) {
		t.Errorf("JUnit does not name the refusal:\n%s", junit.String())
	}
}
