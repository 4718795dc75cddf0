package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/sandbox"
)

func TestMain(m *testing.M) {
	fakecli.RunIfRequested()
	if code, ok := sandbox.RunForwarder(os.Args[1:], sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}); ok {
		os.Exit(code) // this test binary stands in for pneuma inside a sandbox
	}
	runMCPServerIfRequested()
	os.Exit(m.Run())
}

// Faults the real CLI will not produce on demand, played by the fake CLI.
// Each must end in bounded time with the right status and reason, keep the
// job's work committed on its branch, and leave no process behind.

func okResult(cost float64) fakecli.Step {
	return fakecli.Step{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Text: "done", NumTurns: 1, CostUSD: cost, Usage: fakecli.Usage{Input: 10, Output: 5}})}
}

func initStep() fakecli.Step { return fakecli.Step{Line: fakecli.InitLine("{{session}}")} }

type fault struct {
	name     string
	scenario fakecli.Scenario
	job      string // extra job fields (YAML, indented 4)
	// touch writes a file in the worktree while the job runs, as an agent would.
	touch      bool
	wantStatus string
	wantReason string
	maxTime    time.Duration
	check      func(t *testing.T, res report.Job, bin string)
}

func TestFaults(t *testing.T) {
	faults := []fault{
		{
			name: "crash mid-line",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), {Raw: `{"type":"assistant","message":{"id":"msg_x","content":[{"type":"te`}, fakecli.Exit(1),
			}}}},
			wantStatus: report.StatusFailed, wantReason: report.ReasonNoResult, maxTime: 10 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if !strings.Contains(res.Error, "exit code 1") {
					t.Errorf("error %q does not give the exit code", res.Error)
				}
				data, _ := os.ReadFile(res.Stream)
				if !strings.HasSuffix(string(data), `"type":"te`) {
					t.Errorf("stream.jsonl lost the torn line: %q", tail(string(data), 80))
				}
			},
		},
		{
			name: "non-JSON output then a result",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), {Line: "Warning: something odd"}, {Line: "{not json"}, okResult(0.02),
			}}}},
			wantStatus: report.StatusSucceeded, maxTime: 10 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if res.CostUSD != 0.02 {
					t.Errorf("cost %v, want 0.02", res.CostUSD)
				}
			},
		},
		{
			name: "20 MB line",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), {BigLine: 20 << 20}, okResult(0.03),
			}}}},
			// A bound against a hang, not a speed test: copying and decoding
			// 20 MB under the race detector on a loaded CI machine took 20 s.
			wantStatus: report.StatusSucceeded, maxTime: 60 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				st, err := os.Stat(res.Stream)
				if err != nil || st.Size() < 20<<20 {
					t.Errorf("stream.jsonl should hold the 20 MB line verbatim: %v %v", st, err)
				}
			},
		},
		{
			name:       "hang before output hits the timeout",
			scenario:   fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{{Hang: true}}}}},
			job:        "    timeout: 2s\n",
			touch:      true,
			wantStatus: report.StatusFailed, wantReason: report.ReasonTimeout, maxTime: 15 * time.Second,
		},
		{
			name:       "silence hits the idle timeout",
			scenario:   fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{initStep(), {Hang: true}}}}},
			job:        "    idle_timeout: 1s\n",
			touch:      true,
			wantStatus: report.StatusFailed, wantReason: report.ReasonIdleTimeout, maxTime: 15 * time.Second,
		},
		{
			name: "api retries count as life",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(),
				{Line: fakecli.APIRetryLine("{{session}}", 1, 10, 700, 500, "server_error")}, {SleepMS: 700},
				{Line: fakecli.APIRetryLine("{{session}}", 2, 10, 700, 500, "server_error")}, {SleepMS: 700},
				{Line: fakecli.APIRetryLine("{{session}}", 3, 10, 700, 500, "server_error")}, {SleepMS: 700},
				okResult(0.01),
			}}}},
			job:        "    idle_timeout: 1500ms\n",
			wantStatus: report.StatusSucceeded, maxTime: 15 * time.Second,
		},
		{
			name: "newer message kinds are acted on",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(),
				{Line: fakecli.APIRetryLine("{{session}}", 1, 10, 10, 529, "overloaded")},
				{Line: `{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto","pre_tokens":150000},"session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"hook_started","hook_id":"h1","hook_name":"Stop","hook_event":"Stop","session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"toolu_d1","message":"denied","session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"model_refusal_fallback","trigger":"refusal","direction":"retry","original_model":"claude-opus-5-5","fallback_model":"claude-sonnet-5","request_id":null,"content":"","session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"task_started","task_id":"b1","description":"dev server","task_type":"local_bash","is_backgrounded":true,"session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"task_started","task_id":"b2","description":"tests","task_type":"local_bash","is_backgrounded":true,"session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"task_notification","task_id":"b2","status":"completed","output_file":"","summary":"","session_id":"{{session}}"}`},
				{Line: `{"type":"system","subtype":"session_writes_lost","error_code":"ENOSPC","lost":["transcript"],"session_id":"{{session}}"}`},
				{Line: `{"type":"brand_new_kind","payload":[1,2,3],"session_id":"{{session}}"}`},
				okResult(0.01),
			}}}},
			wantStatus: report.StatusSucceeded, maxTime: 15 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if res.APIRetries != 1 || res.Compactions != 1 || res.HookRuns != 1 || res.ToolDenials != 1 {
					t.Errorf("api_retries %d compactions %d hook_runs %d tool_denials %d, want 1 each", res.APIRetries, res.Compactions, res.HookRuns, res.ToolDenials)
				}
				if f := res.RefusalFallback; f == nil || f.FallbackModel != "claude-sonnet-5" || res.Model != "claude-sonnet-5" {
					t.Errorf("refusal fallback %+v, model %q: want the fallback model recorded as the one that served", f, res.Model)
				}
				if len(res.TasksRunning) != 1 || res.TasksRunning[0].ID != "b1" {
					t.Errorf("tasks running %+v, want b1 only", res.TasksRunning)
				}
				codes := map[string]bool{}
				for _, w := range res.Warnings {
					codes[w.Code] = true
				}
				if !codes[report.WarnSessionWritesLost] || !codes[report.WarnTasksRunning] {
					t.Errorf("warnings %+v, want session_writes_lost and tasks_running", res.Warnings)
				}
				stream, err := os.ReadFile(res.Stream)
				if err != nil || !strings.Contains(string(stream), `{"type":"brand_new_kind","payload":[1,2,3]`) {
					t.Errorf("stream.jsonl does not keep the unknown kind verbatim (%v)", err)
				}
			},
		},
		{
			name: "timeout while the agent fixes a failed verification",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{
				{When: "verification command", Steps: []fakecli.Step{{Hang: true}}},
				{Steps: []fakecli.Step{initStep(), okResult(0.01)}},
			}},
			job:        "    timeout: 3s\n    verify: {command: [\"false\"], attempts: 3}\n",
			touch:      true,
			wantStatus: report.StatusFailed, wantReason: report.ReasonTimeout, maxTime: 15 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if len(res.Verify) != 1 || res.Verify[0].Passed {
					t.Errorf("verify rounds %+v, want one failed round", res.Verify)
				}
			},
		},
		{
			name: "hang after result",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), okResult(0.04), {Hang: true},
			}}}},
			wantStatus: report.StatusSucceeded, maxTime: 15 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if res.CostUSD != 0.04 || res.Result != "done" {
					t.Errorf("the result was not kept: cost %v result %q", res.CostUSD, res.Result)
				}
			},
		},
		{
			name: "ignored SIGINT and SIGTERM",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				{IgnoreSignals: []string{"SIGINT", "SIGTERM"}}, initStep(), {Hang: true},
			}}}},
			job:        "    timeout: 1s\n",
			wantStatus: report.StatusFailed, wantReason: report.ReasonTimeout, maxTime: 15 * time.Second,
		},
		{
			name: "grandchild holds stdout open",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), {Grandchild: true}, okResult(0.05), fakecli.Exit(0),
			}}}},
			wantStatus: report.StatusSucceeded, maxTime: 15 * time.Second,
		},
		{
			name: "error result from an API error",
			scenario: fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
				initStep(), {Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{IsError: true, APIErrorStatus: ptr(529), Text: "API Error: Repeated 529 Overloaded errors", CostUSD: 0})}, fakecli.Exit(1),
			}}}},
			wantStatus: report.StatusFailed, wantReason: report.ReasonAPIError, maxTime: 10 * time.Second,
		},
		{
			name: "usage error on stderr, no result",
			scenario: fakecli.Scenario{Start: []fakecli.Step{
				{Stderr: "Error: When using --print, --output-format=stream-json requires --verbose\n"}, fakecli.Exit(1),
			}},
			wantStatus: report.StatusFailed, wantReason: report.ReasonNoResult, maxTime: 10 * time.Second,
			check: func(t *testing.T, res report.Job, bin string) {
				if !strings.Contains(res.Error, "requires --verbose") {
					t.Errorf("error %q does not carry the CLI's stderr", res.Error)
				}
			},
		},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			runFault(t, f)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func runFault(t *testing.T, f fault) {
	bin := fakecli.Install(t, f.scenario)
	repo := claudetest.GitRepo(t)
	jobs := "version: 1\njobs:\n  - name: victim\n    prompt: do the thing\n" + f.job + "  - name: bystander\n    prompt: do the other thing\n"
	p := planFor(t, repo, jobs, bin)
	// The bystander plays a well-behaved CLI.
	p.Jobs[1].Binary = fakecli.Install(t, fakecli.Scenario{})
	if f.touch {
		go touchWhenReady(t, bin, p.Jobs[0].Dir, "agent-work.txt")
	}
	start := time.Now()
	rep := runPlan(t, p, max(30*time.Second, f.maxTime+15*time.Second))
	took := time.Since(start)
	if took > f.maxTime {
		t.Errorf("run took %s, want at most %s", took, f.maxTime)
	}
	t.Logf("%s: %s/%s in %s", f.name, rep.Jobs[0].Status, rep.Jobs[0].Reason, took.Round(time.Millisecond))
	res := rep.Jobs[0]
	if res.Status != f.wantStatus || res.Reason != f.wantReason {
		t.Errorf("victim: %s/%s (%s), want %s/%s", res.Status, res.Reason, res.Error, f.wantStatus, f.wantReason)
	}
	if by := rep.Jobs[1]; by.Status == report.StatusSkipped || by.Name != "bystander" {
		t.Errorf("bystander: %+v", by)
	}
	if f.touch {
		got := claudetest.Git(t, repo, "show", p.Jobs[0].Branch+":agent-work.txt")
		if strings.TrimSpace(got) != "work in progress" {
			t.Errorf("the job's work was not committed on its branch: %q", got)
		}
		if res.Worktree == "" {
			t.Errorf("failed job's worktree was removed")
		}
	}
	assertNoProcesses(t, bin)
	if f.check != nil {
		f.check(t, res, bin)
	}
}

func planFor(t *testing.T, repo, jobs, bin string) *runner.Plan {
	t.Helper()
	path := filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := jobfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.BuildPlan(context.Background(), file, runner.PlanOptions{RunID: "faults", Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runPlan(t *testing.T, p *runner.Plan, limit time.Duration) *report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	rep, err := runner.Run(ctx, p, runner.Options{
		StopGrace:    300 * time.Millisecond,
		ResultGrace:  500 * time.Millisecond,
		RetryBackoff: 10 * time.Millisecond,
	})
	rep = loadReport(t, rep)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("run did not end within %s", limit)
	}
	validateReport(t, runner.RunReportPath(p))
	return rep
}

// touchWhenReady writes a file into dir as the agent would: once the fake
// CLI at bin has started in it.
func touchWhenReady(t *testing.T, bin, dir, name string) {
	if poll.Until(10*time.Second, func() bool { return len(fakecli.Calls(t, bin)) > 0 }) {
		_ = os.WriteFile(filepath.Join(dir, name), []byte("work in progress\n"), 0o644) // the job's check says if it is missing
	}
}

// assertNoProcesses checks that every process the fake CLI recorded (itself
// and its grandchildren) is gone.
func assertNoProcesses(t *testing.T, bin string) {
	t.Helper()
	for _, c := range fakecli.Calls(t, bin) {
		for _, pid := range append([]int{c.Pid}, c.Grandchildren...) {
			if fakecli.Alive(pid) {
				t.Errorf("process %d outlived its job", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

func TestRunBudget(t *testing.T) {
	// Every job reports $0.25; the run may spend $0.60.
	bin := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		initStep(), okResult(0.25),
	}}}})
	repo := claudetest.GitRepo(t)
	p := planFor(t, repo, `version: 1
concurrency: 1
budget_usd: 0.60
jobs:
  - {name: j1, prompt: a}
  - {name: j2, prompt: b, max_budget_usd: 5}
  - {name: j3, prompt: c}
  - {name: j4, prompt: d}
`, bin)
	rep := runPlan(t, p, 30*time.Second)
	var got []string
	for _, j := range rep.Jobs {
		got = append(got, j.Status+"/"+j.Reason)
	}
	want := "succeeded/,succeeded/,succeeded/,skipped/budget"
	if strings.Join(got, ",") != want {
		t.Errorf("statuses %v, want %s", got, want)
	}
	if rep.Budget == nil || rep.Budget.CapUSD != 0.60 || rep.Budget.SpentUSD != 0.75 {
		t.Errorf("budget %+v", rep.Budget)
	}
	if rep.Status != report.RunFailed {
		t.Errorf("a run that skipped work is %s, want failed", rep.Status)
	}
	// Each job's --max-budget-usd is at most what the run had left.
	calls := fakecli.Calls(t, bin)
	wantCaps := []string{"0.6", "0.35", "0.1"}
	for i, c := range calls {
		capArg := ""
		for k, a := range c.Args {
			if a == "--max-budget-usd" && k+1 < len(c.Args) {
				capArg = c.Args[k+1]
			}
		}
		if i < len(wantCaps) && capArg != wantCaps[i] {
			t.Errorf("job %d ran with --max-budget-usd %q, want %s", i+1, capArg, wantCaps[i])
		}
	}
}

func TestReportRedactsSecrets(t *testing.T) {
	const key = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA"
	bin := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		initStep(),
		{Stderr: "request failed with ANTHROPIC_API_KEY=" + key + "\n"},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{IsError: true, Subtype: "error_during_execution", Errors: []string{"bad key " + key}, Text: "the key is " + key})},
		fakecli.Exit(1),
	}}}})
	repo := claudetest.GitRepo(t)
	p := planFor(t, repo, "version: 1\njobs:\n  - name: leaky\n    prompt: x\n", bin)
	rep := runPlan(t, p, 30*time.Second)
	data, err := os.ReadFile(runner.RunReportPath(p))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), key) {
		t.Errorf("report.json carries the key")
	}
	if j := rep.Jobs[0]; !strings.Contains(j.Error, "[REDACTED]") {
		t.Errorf("error %q was not redacted", j.Error)
	}
}
