package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/cmd"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// TestMain lets the test binary play two other programs: the fake Claude
// CLI (fakecli) and pneuma itself (PNEUMA_TEST_MAIN=1), so that signal and
// crash tests run pneuma as a real process.
func TestMain(m *testing.M) {
	fakecli.RunIfRequested()
	if os.Getenv("PNEUMA_TEST_MAIN") == "1" {
		os.Exit(cmd.Main())
	}
	os.Exit(m.Run())
}

type result struct {
	code   int
	stdout string
	stderr string
}

// run runs pneuma in-process with args and an environment overlay.
func run(t *testing.T, dir string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	io := &cmd.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Getenv: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "GITHUB_ACTIONS" || k == "GITHUB_STEP_SUMMARY" || k == "GITHUB_OUTPUT" || strings.HasPrefix(k, "PNEUMA_") || k == "CI_NODE_INDEX" || k == "BUILDKITE_PARALLEL_JOB" || k == "JOB_COMPLETION_INDEX" {
			return "" // keep the developer's CI environment out
		}
		return os.Getenv(k)
	}}
	wd, _ := os.Getwd()
	if dir != "" {
		if err := os.Chdir(dir); err != nil {
			t.Fatal(err)
		}
		defer os.Chdir(wd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := cmd.Execute(ctx, io, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func writeJobs(t *testing.T, dir, yaml string) string {
	t.Helper()
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const twoJobs = `version: 1
jobs:
  - name: one
    prompt: first
  - name: two
    prompt: second
`

func TestRunBadInput(t *testing.T) {
	okCLI := fakecli.Install(t, fakecli.Scenario{})
	repo := claudetest.GitRepo(t)
	notRepo := t.TempDir()
	tests := []struct {
		name     string
		dir      string
		yaml     string
		args     []string
		env      map[string]string
		wantCode int
		want     []string
	}{
		{
			name:     "every jobs file problem at once",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: a\n    prompt: x\n    max_turns: lots\n  - name: a\n    prompt: y\n  - name: b\n",
			wantCode: cmd.ExitUsage,
			want: []string{
				"jobs.yaml:5:16: expected a whole number, got \"lots\"",
				"jobs.yaml:6:11: duplicate job name \"a\" (first at line 3)",
				"jobs.yaml:8:5: job \"b\" has neither prompt nor prompt_file",
			},
		},
		{
			name:     "names that sanitise to the same branch",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: fix lint\n    prompt: x\n  - name: fix/lint\n    prompt: y\n",
			wantCode: cmd.ExitUsage,
			want:     []string{`jobs.yaml:5:11: job names "fix lint" and "fix/lint" both become "fix-lint"`},
		},
		{
			name:     "missing prompt file",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: a\n    prompt_file: prompts/nope.md\n",
			wantCode: cmd.ExitUsage,
			want:     []string{"jobs.yaml:4:18: prompt_file prompts/nope.md: no such file or directory"},
		},
		{
			name:     "base ref that does not exist",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: a\n    prompt: x\n    base: no-such-branch\n",
			wantCode: cmd.ExitUsage,
			want:     []string{`jobs.yaml:5:11: base "no-such-branch" does not name a commit`},
		},
		{
			name:     "repo that is not a git repository",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: a\n    prompt: x\n    repo: " + notRepo + "\n",
			wantCode: cmd.ExitEnvironment,
			want:     []string{"jobs.yaml:5:11: repo " + notRepo, "not a git repository"},
		},
		{
			name:     "jobs file outside any repository",
			dir:      notRepo,
			yaml:     twoJobs,
			wantCode: cmd.ExitEnvironment,
			want:     []string{`job "one" has no repo and the jobs file is not inside a git repository`},
		},
		{
			name:     "claude not found",
			dir:      repo,
			yaml:     twoJobs,
			args:     []string{"--claude", filepath.Join(notRepo, "claude")},
			wantCode: cmd.ExitEnvironment,
			want:     []string{"npm install -g @anthropic-ai/claude-code"},
		},
		{
			name:     "a claude that is not Claude Code",
			dir:      repo,
			yaml:     twoJobs,
			args:     []string{"--claude", fakecli.Install(t, fakecli.Scenario{Version: "claude 0.3 (a different tool)"})},
			wantCode: cmd.ExitEnvironment,
			want:     []string{"not the Claude Code CLI"},
		},
		{
			name:     "a Claude Code too old for stream-json",
			dir:      repo,
			yaml:     twoJobs,
			args:     []string{"--claude", fakecli.Install(t, fakecli.Scenario{Version: "0.2.9 (Claude Code)"})},
			wantCode: cmd.ExitEnvironment,
			want:     []string{"0.2.9 is too old", "2.0.0"},
		},
		{
			name:     "unknown flag",
			dir:      repo,
			yaml:     twoJobs,
			args:     []string{"--concurrencyy", "3"},
			wantCode: cmd.ExitUsage,
			want:     []string{"unknown flag: --concurrencyy"},
		},
		{
			name:     "bad shard",
			dir:      repo,
			yaml:     twoJobs,
			args:     []string{"--shard", "3/2"},
			wantCode: cmd.ExitUsage,
			want:     []string{"--shard"},
		},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct {
			name     string
			dir      string
			yaml     string
			args     []string
			env      map[string]string
			wantCode int
			want     []string
		}{
			name:     "bypassPermissions as root without IS_SANDBOX",
			dir:      repo,
			yaml:     "version: 1\njobs:\n  - name: a\n    prompt: x\n    permission_mode: bypassPermissions\n",
			env:      map[string]string{"IS_SANDBOX": ""},
			wantCode: cmd.ExitUsage,
			want:     []string{"jobs.yaml:5:22: permission_mode bypassPermissions as root", "set IS_SANDBOX=1"},
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeJobs(t, t.TempDir(), tt.yaml)
			if tt.dir != "" {
				path = writeJobs(t, tt.dir, tt.yaml)
			}
			args := append([]string{"run"}, tt.args...)
			if !slices.Contains(tt.args, "--claude") {
				args = append(args, "--claude", okCLI)
			}
			r := run(t, "", tt.env, append(args, path)...)
			if r.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstderr: %s", r.code, tt.wantCode, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
			// Nothing was touched: no run directory, no branch.
			if _, err := os.Stat(filepath.Join(repo, ".pneuma", "runs")); err == nil {
				t.Errorf("bad input created a run directory")
			}
			if br := claudetest.Git(t, repo, "branch", "--list", "pneuma/*"); strings.TrimSpace(br) != "" {
				t.Errorf("bad input created branches: %s", br)
			}
		})
	}
}

// readReport reads a report the run wrote and checks it against the schema.
func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Validate(data); err != nil {
		t.Errorf("%s does not match the report schema: %v", path, err)
	}
	rep, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRunDryRun(t *testing.T) {
	repo := claudetest.GitRepo(t)
	path := writeJobs(t, repo, "version: 1\njobs:\n  - name: lint it\n    prompt: fix lint\n    model: sonnet\n    max_turns: 7\n    allowed_tools: [\"Bash(go vet:*)\", Edit]\n")
	cli := fakecli.Install(t, fakecli.Scenario{})
	r := run(t, "", nil, "run", "--dry-run", "--claude", cli, path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, w := range []string{
		"job lint it",
		"branch   pneuma/",
		"/lint-it",
		cli + " -p --input-format stream-json --output-format stream-json --verbose",
		"--model sonnet",
		"--max-turns 7",
		`"--allowed-tools=Bash(go vet:*)" --allowed-tools=Edit`,
	} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("dry run output lacks %q:\n%s", w, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".pneuma")); err == nil {
		t.Errorf("dry run created .pneuma")
	}
	if len(fakecli.Calls(t, cli)) != 0 {
		t.Errorf("dry run started the CLI")
	}
}

func TestRunOutputs(t *testing.T) {
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "second", Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Subtype: "error_max_turns", IsError: true, NumTurns: 3, CostUSD: 0.5, Errors: []string{"Reached maximum number of turns (2)"}, Text: "::warning::model text\x1b[31m red"})},
		fakecli.Exit(1),
	}}}})
	path := writeJobs(t, repo, "version: 1\nconcurrency: 1\njobs:\n  - name: one\n    prompt: first\n  - name: two\n    prompt: second\n")
	out := t.TempDir()
	stepSummary := filepath.Join(out, "step-summary.md")
	if err := os.WriteFile(stepSummary, []byte("# earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": stepSummary}
	r := run(t, "", env, "run", "--claude", cli, "--stagger", "0",
		"--report", filepath.Join(out, "r.json"), "--junit", filepath.Join(out, "junit.xml"), "--summary", filepath.Join(out, "summary.md"), path)
	if r.code != cmd.ExitFailed {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	rep := readReport(t, filepath.Join(out, "r.json"))
	if rep.Totals.Succeeded != 1 || rep.Totals.Failed != 1 || rep.Jobs[1].Reason != report.ReasonMaxTurns {
		t.Errorf("report totals %+v, job two %s/%s", rep.Totals, rep.Jobs[1].Status, rep.Jobs[1].Reason)
	}
	for _, f := range []string{"junit.xml", "summary.md"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	summary, _ := os.ReadFile(stepSummary)
	if !strings.HasPrefix(string(summary), "# earlier step\n") || !strings.Contains(string(summary), "| two |") {
		t.Errorf("GITHUB_STEP_SUMMARY not appended:\n%s", summary)
	}
	if !strings.Contains(r.stderr, "::error") {
		t.Errorf("no ::error annotation in GitHub Actions:\n%s", r.stderr)
	}
	// Model text echoed in the log never runs a workflow command.
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "::warning::model text") {
			t.Errorf("model text reached the log unguarded: %q", line)
		}
	}
	for _, w := range []string{"one", "two", "succeeded", "failed (max_turns)", "$0.5010"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("table lacks %q:\n%s", w, r.stdout)
		}
	}
}

func TestRunJSONEvents(t *testing.T) {
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{})
	path := writeJobs(t, repo, twoJobs)
	r := run(t, "", nil, "run", "--json", "--claude", cli, path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var types []string
	var last runner.Event
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e runner.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("stdout line is not a JSON event: %q", line)
		}
		if runner.IsFine(e.Type) {
			t.Errorf("--json wrote a fine event (the run's log has those): %s", line)
		}
		types, last = append(types, e.Type), e
	}
	if types[0] != runner.EventRunStarted || types[len(types)-1] != runner.EventRunFinished {
		t.Errorf("events %v", types)
	}
	if last.Report == nil || len(last.Report.Jobs) != 2 {
		t.Errorf("run_finished on stdout carries the report with its 2 jobs: %+v", last.Report)
	}
	count := map[string]int{}
	for _, ty := range types {
		count[ty]++
	}
	if count[runner.EventJobStarted] != 2 || count[runner.EventJobFinished] != 2 {
		t.Errorf("events %v", types)
	}
}

// pneuma runs the test binary as pneuma in its own process.
func pneuma(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "PNEUMA_TEST_MAIN=1", "GITHUB_ACTIONS=", "GITHUB_STEP_SUMMARY=", "GITHUB_OUTPUT=")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

// waitJournal polls run.json until cond holds.
func waitJournal(t *testing.T, runDir string, cond func(*runner.Journal) bool) *runner.Journal {
	t.Helper()
	var j *runner.Journal
	poll.Eventually(t, 30*time.Second, func() bool {
		var err error
		j, err = runner.ReadJournal(runDir)
		return err == nil && cond(j)
	}, "journal %s to reach the expected state", runDir)
	return j
}

func jobState(j *runner.Journal, name string) *runner.JobState {
	for _, s := range j.Jobs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func onlyRunDir(t *testing.T, repo string) string {
	t.Helper()
	var m []string
	poll.Eventually(t, 30*time.Second, func() bool {
		m, _ = filepath.Glob(filepath.Join(repo, ".pneuma", "runs", "*")) // the pattern is valid
		return len(m) == 1
	}, "one run directory in %s", repo)
	return m[0]
}

// hangingJob writes work into its worktree (as an agent would) then hangs,
// with a grandchild holding stdout.
func hangingScenario(ignoreSignals bool) fakecli.Scenario {
	steps := []fakecli.Step{{Line: fakecli.InitLine("{{session}}")}, {Grandchild: true}}
	if ignoreSignals {
		steps = append([]fakecli.Step{{IgnoreSignals: []string{"SIGINT", "SIGTERM"}}}, steps...)
	}
	return fakecli.Scenario{Turns: []fakecli.Turn{{Steps: append(steps, fakecli.Step{Hang: true})}}}
}

func TestInterruptCommitsWorkAndExits130(t *testing.T) {
	for _, tc := range []struct {
		name    string
		signals int
		ignore  bool
		grace   string
		within  time.Duration
	}{
		{"one signal stops gracefully", 1, false, "1s", 15 * time.Second},
		{"second signal kills at once", 2, true, "60s", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := claudetest.GitRepo(t)
			cli := fakecli.Install(t, hangingScenario(tc.ignore))
			path := writeJobs(t, repo, "version: 1\njobs:\n  - name: busy\n    prompt: work\n  - name: later\n    prompt: never starts\n")
			c := pneuma(t, repo, "run", "-j", "1", "--claude", cli, "--stop-grace", tc.grace, path)
			var stdout bytes.Buffer
			stderr := &lockedBuffer{}
			c.Stdout, c.Stderr = &stdout, stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			defer c.Process.Kill()
			runDir := onlyRunDir(t, repo)
			waitJournal(t, runDir, func(j *runner.Journal) bool { return jobState(j, "busy").SessionID != "" })
			wt := filepath.Join(repo, ".pneuma", "worktrees", filepath.Base(runDir), "busy")
			if err := os.WriteFile(filepath.Join(wt, "half-done.txt"), []byte("half\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = c.Process.Signal(syscall.SIGINT)
			if tc.signals == 2 {
				// The second comes once pneuma took the first.
				poll.Eventually(t, 10*time.Second, func() bool { return strings.Contains(stderr.String(), "again to kill") },
					"pneuma says it stops gracefully; stderr: %s", stderr.String())
				_ = c.Process.Signal(syscall.SIGINT)
			}
			err := waitTimeout(c, tc.within+10*time.Second)
			took := time.Since(start)
			if code := exitCode(err); code != cmd.ExitInterrupted {
				t.Fatalf("exit %d (%v), want 130\nstderr: %s", code, err, stderr.String())
			}
			if took > tc.within {
				t.Errorf("stopping took %s, want at most %s", took, tc.within)
			}
			t.Logf("%s: exit 130 after %s", tc.name, took.Round(time.Millisecond))
			rep := readReport(t, filepath.Join(runDir, "report.json"))
			if rep.Status != report.RunInterrupted || rep.Jobs[0].Status != report.StatusInterrupted || rep.Jobs[1].Status != report.StatusSkipped {
				t.Errorf("report %s: busy %s, later %s", rep.Status, rep.Jobs[0].Status, rep.Jobs[1].Status)
			}
			branch := rep.Jobs[0].Branch
			if got := claudetest.Git(t, repo, "show", branch+":half-done.txt"); strings.TrimSpace(got) != "half" {
				t.Errorf("interrupted work not committed on %s: %q", branch, got)
			}
			for _, call := range fakecli.Calls(t, cli) {
				for _, pid := range append([]int{call.Pid}, call.Grandchildren...) {
					if !poll.Gone(t, pid, 2*time.Second) {
						t.Errorf("process %d outlived pneuma", pid)
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			}
		})
	}
}

func waitTimeout(c *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		return <-done
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestKilledRunResumes(t *testing.T) {
	repo := claudetest.GitRepo(t)
	// "quick" finishes; "slow" hangs until pneuma is killed.
	first := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{
		{When: "quick", Steps: []fakecli.Step{
			{Line: fakecli.InitLine("{{session}}")},
			{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Text: "quick done", NumTurns: 1, CostUSD: 0.25})},
		}},
		{When: "slow", Steps: []fakecli.Step{{Line: fakecli.InitLine("{{session}}")}, {Hang: true}}},
	}})
	path := writeJobs(t, repo, "version: 1\njobs:\n  - name: quick\n    prompt: quick job\n  - name: slow\n    prompt: slow job\n")
	c := pneuma(t, repo, "run", "-j", "2", "--stagger", "0", "--claude", first, path)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	runDir := onlyRunDir(t, repo)
	waitJournal(t, runDir, func(j *runner.Journal) bool {
		q, s := jobState(j, "quick"), jobState(j, "slow")
		return q.State == runner.StateFinished && s.State == runner.StateRunning && s.SessionID != ""
	})
	wt := filepath.Join(repo, ".pneuma", "worktrees", filepath.Base(runDir), "slow")
	if err := os.WriteFile(filepath.Join(wt, "partial.txt"), []byte("partial\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = c.Process.Kill() // SIGKILL: no cleanup at all
	_ = c.Wait()
	for _, call := range fakecli.Calls(t, first) {
		if !poll.Gone(t, call.Pid, 2*time.Second) {
			t.Errorf("CLI %d outlived pneuma's SIGKILL", call.Pid)
			_ = syscall.Kill(call.Pid, syscall.SIGKILL)
		}
	}

	// Resume with a CLI that now finishes the slow job.
	second := fakecli.Install(t, fakecli.Scenario{})
	r := run(t, "", nil, "run", "--resume", filepath.Base(runDir), "--claude", second, path)
	if r.code != 0 {
		t.Fatalf("resume exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	rep := readReport(t, filepath.Join(runDir, "report.json"))
	if rep.RunID != filepath.Base(runDir) || rep.Status != report.RunSucceeded || len(rep.Jobs) != 2 {
		t.Fatalf("report %s %s with %d jobs", rep.RunID, rep.Status, len(rep.Jobs))
	}
	quick, slow := rep.Jobs[0], rep.Jobs[1]
	if quick.Status != report.StatusSucceeded || quick.CostUSD != 0.25 || quick.Result != "quick done" {
		t.Errorf("quick was not kept as it was: %+v", quick)
	}
	if slow.Status != report.StatusSucceeded {
		t.Errorf("slow: %s/%s %s", slow.Status, slow.Reason, slow.Error)
	}
	calls := fakecli.Calls(t, second)
	if len(calls) != 1 {
		t.Fatalf("resume started the CLI %d times, want once (slow only)", len(calls))
	}
	if !slices.Contains(calls[0].Args, "--resume") || !slices.Contains(calls[0].Args, fakecli.DefaultSessionID) {
		t.Errorf("slow did not continue its session: %v", calls[0].Args)
	}
	if got := claudetest.Git(t, repo, "show", slow.Branch+":partial.txt"); strings.TrimSpace(got) != "partial" {
		t.Errorf("work from before the crash is not on the branch: %q", got)
	}
}

func TestRerunFailed(t *testing.T) {
	repo := claudetest.GitRepo(t)
	flaky := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "second", Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")}, fakecli.Exit(1),
	}}}})
	path := writeJobs(t, repo, twoJobs)
	first := run(t, "", nil, "run", "--stagger", "0", "--claude", flaky, "--json", path)
	if first.code != cmd.ExitFailed {
		t.Fatalf("first run exit %d: %s", first.code, first.stderr)
	}
	var runID string
	for _, line := range strings.Split(first.stdout, "\n") {
		var e runner.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.RunID != "" {
			runID = e.RunID
			break
		}
	}
	good := fakecli.Install(t, fakecli.Scenario{})
	second := run(t, "", nil, "run", "--stagger", "0", "--claude", good, "--rerun-failed", runID, path)
	if second.code != 0 {
		t.Fatalf("rerun exit %d: %s", second.code, second.stderr)
	}
	calls := fakecli.Calls(t, good)
	if len(calls) != 1 || !strings.Contains(strings.Join(calls[0].Stdin, "\n"), "second") {
		t.Errorf("rerun ran %d jobs: %+v", len(calls), calls)
	}
}

// reopen marks jobs of a finished run as never run, as if pneuma had died
// before them, so that --resume has work to continue.
func reopen(t *testing.T, runDir string, names ...string) {
	t.Helper()
	j, err := runner.ReadJournal(runDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range j.Jobs {
		if slices.Contains(names, s.Name) {
			s.State, s.Result, s.Attempts, s.SessionID, s.Attempt = runner.StatePending, nil, nil, "", 0
		}
	}
	j.Status = "running"
	data, err := json.Marshal(&j.JournalData)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(runner.JournalPath(runDir), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// `pneuma run --resume ID` finds the run in the current repository without
// its jobs file, runs the plan's jobs and says which lost their env; with a
// jobs file that changed since, it says what changed and keeps the plan.
func TestResumeWithoutJobsFile(t *testing.T) {
	repo := claudetest.GitRepo(t)
	bin := fakecli.Install(t, fakecli.Scenario{Env: []string{"JOB_TOKEN"}})
	path := writeJobs(t, repo, `version: 1
jobs:
  - name: one
    prompt: first
  - name: two
    prompt: second
    env: {JOB_TOKEN: s3cret}
`)
	first := run(t, "", nil, "run", "--stagger", "0", "-q", "--claude", bin, path)
	if first.code != 0 {
		t.Fatalf("first run exit %d: %s", first.code, first.stderr)
	}
	runDir := onlyRunDir(t, repo)
	id := filepath.Base(runDir)
	if data, _ := os.ReadFile(runner.JournalPath(runDir)); bytes.Contains(data, []byte("s3cret")) || !bytes.Contains(data, []byte("JOB_TOKEN")) {
		t.Errorf("run.json should name JOB_TOKEN without its value:\n%s", data)
	}

	reopen(t, runDir, "two")
	r := run(t, repo, nil, "run", "--resume", id, "-q", "--claude", bin)
	if r.code != 0 {
		t.Fatalf("resume exit %d\nstderr: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "warning: run.json does not keep env") || !strings.Contains(r.stderr, "two (JOB_TOKEN)") {
		t.Errorf("no warning about the lost env:\n%s", r.stderr)
	}
	calls := fakecli.Calls(t, bin)
	if len(calls) != 3 || calls[2].Env["JOB_TOKEN"] != "" || !strings.Contains(strings.Join(calls[2].Stdin, "\n"), "second") {
		t.Fatalf("resume ran %+v", calls[2:])
	}
	if rep := readReport(t, filepath.Join(runDir, "report.json")); rep.Status != report.RunSucceeded || len(rep.Jobs) != 2 {
		t.Errorf("report %s with %d jobs", rep.Status, len(rep.Jobs))
	}

	// The file changes: a prompt, a job added, a job removed.
	writeJobs(t, repo, "version: 1\njobs:\n  - name: one\n    prompt: first, reworded\n  - name: three\n    prompt: third\n")
	reopen(t, runDir, "two")
	r = run(t, repo, nil, "run", "--resume", id, "-q", "--claude", bin, path)
	if r.code != 0 {
		t.Fatalf("resume with a changed file exit %d\nstderr: %s", r.code, r.stderr)
	}
	want := "changed since run " + id + " (jobs added: three; jobs removed: two; prompt changed: one)"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if calls = fakecli.Calls(t, bin); len(calls) != 4 || !strings.Contains(strings.Join(calls[3].Stdin, "\n"), "second") {
		t.Errorf("the resumed run did not keep its plan: %+v", calls[3:])
	}

	if r := run(t, t.TempDir(), nil, "run", "--resume", id, "--claude", bin); r.code == 0 {
		t.Errorf("resume outside the repository succeeded")
	}
	if r := run(t, repo, nil, "run", "--claude", bin); r.code != cmd.ExitUsage {
		t.Errorf("run without a jobs file nor --resume: exit %d", r.code)
	}
}

// lockedBuffer is a buffer a child's output is copied into while the test
// reads it.
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
