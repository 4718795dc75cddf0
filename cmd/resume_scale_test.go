package cmd_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// TestKilledRunOfHundredsResumes: a run of 300 jobs is SIGKILLed with a
// third of them done and others in flight; --resume runs each job the
// journal did not have finished exactly once, none that it had, and the
// report lists every job once, succeeded (issue 27).
func TestKilledRunOfHundredsResumes(t *testing.T) {
	const n, killAt = 300, 100
	repo := claudetest.GitRepo(t)
	var jobs strings.Builder
	jobs.WriteString("version: 1\njobs:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&jobs, "  - name: job-%03d\n    prompt: job %d of the killed run\n", i, i)
	}
	path := writeJobs(t, repo, jobs.String())
	// A short sleep keeps jobs in flight when the kill comes.
	slow := fakecli.DefaultTurn()
	slow.Steps = append([]fakecli.Step{{SleepMS: 30}}, slow.Steps...)
	first := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "killed run", Steps: slow.Steps}}})
	c := pneuma(t, repo, "run", "-j", "8", "--stagger", "0", "--keep-worktrees", "never", "--claude", first, path)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }()
	runDir := onlyRunDir(t, repo)
	poll.Eventually(t, 5*time.Minute, func() bool {
		j, err := runner.ReadJournal(runDir)
		return err == nil && finished(j) >= killAt
	}, "%d jobs of the first run to finish", killAt)
	_ = c.Process.Kill() // SIGKILL: no cleanup at all
	_ = c.Wait()
	before, err := runner.ReadJournal(runDir)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]bool{}
	for _, s := range before.Jobs {
		if s.State == runner.StateFinished {
			done[s.Name] = true
		}
	}
	if len(done) >= n {
		t.Fatalf("the kill came after every job had finished (%d)", len(done))
	}
	firstCalls := callsPerJob(t, first)
	for _, call := range fakecli.Calls(t, first) {
		if !poll.Gone(t, call.Pid, 5*time.Second) {
			t.Errorf("CLI %d outlived pneuma's SIGKILL", call.Pid)
			_ = syscall.Kill(call.Pid, syscall.SIGKILL)
		}
	}

	second := fakecli.Install(t, fakecli.Scenario{})
	r := run(t, "", nil, "run", "--resume", filepath.Base(runDir), "-j", "8", "--stagger", "0", "--keep-worktrees", "never", "--claude", second, path)
	if r.code != 0 {
		t.Fatalf("resume exit %d\nstderr: %s", r.code, r.stderr)
	}
	secondCalls := callsPerJob(t, second)
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("job-%03d", i)
		switch {
		case firstCalls[name] > 1:
			t.Errorf("%s started %d times in the first run", name, firstCalls[name])
		case done[name] && secondCalls[name] != 0:
			t.Errorf("%s had finished before the kill and ran again (%d times)", name, secondCalls[name])
		case !done[name] && secondCalls[name] != 1:
			t.Errorf("%s had not finished before the kill and ran %d times on resume, want once", name, secondCalls[name])
		}
	}
	rep := readReport(t, filepath.Join(runDir, "report.json"))
	if rep.Status != report.RunSucceeded || len(rep.Jobs) != n {
		t.Fatalf("report %s with %d jobs, want succeeded with %d", rep.Status, len(rep.Jobs), n)
	}
	seen := map[string]bool{}
	for i, j := range rep.Jobs {
		if want := fmt.Sprintf("job-%03d", i+1); j.Name != want || seen[j.Name] {
			t.Fatalf("report job %d is %s, want %s once", i, j.Name, want)
		}
		seen[j.Name] = true
		if j.Status != report.StatusSucceeded {
			t.Errorf("%s: %s/%s %s", j.Name, j.Status, j.Reason, j.Error)
		}
	}
	t.Logf("killed with %d of %d jobs finished (%d CLIs started); the resume started %d", len(done), n, len(fakecli.Calls(t, first)), len(fakecli.Calls(t, second)))
}

// finished counts the journal's finished jobs.
func finished(j *runner.Journal) int {
	n := 0
	for _, s := range j.Jobs {
		if s.State == runner.StateFinished {
			n++
		}
	}
	return n
}

// callsPerJob counts the fake CLI's starts per job, by the worktree each
// ran in (named after its job).
func callsPerJob(t *testing.T, bin string) map[string]int {
	t.Helper()
	calls := map[string]int{}
	for _, c := range fakecli.Calls(t, bin) {
		if c.Dir == "" {
			t.Fatalf("a CLI start without its directory: %+v", c)
		}
		calls[filepath.Base(c.Dir)]++
	}
	return calls
}
