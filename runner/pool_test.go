package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// Spare worktrees outlive a run (up to Pool per repository), are reused by
// the next run, and never hold a job's branch or anyone's uncommitted work.
func TestPoolKeepsSparesForTheNextRun(t *testing.T) {
	repo := claudetest.GitRepo(t)
	bin := fakecli.Install(t, fakecli.Scenario{})
	jobs := "version: 1\nconcurrency: 2\njobs:\n  - {name: a, prompt: x}\n  - {name: b, prompt: x}\n  - {name: c, prompt: x}\n"
	if err := os.WriteFile(filepath.Join(repo, "jobs.yaml"), []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	claudetest.Git(t, repo, "add", "jobs.yaml")
	claudetest.Git(t, repo, "commit", "-q", "-m", "jobs")
	run := func(runID string, pool int) *runner.Plan {
		t.Helper()
		file, err := jobfile.Read(filepath.Join(repo, "jobs.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := runner.BuildPlan(context.Background(), file, runner.PlanOptions{RunID: runID, Binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := runner.Run(ctx, p, runner.Options{Pool: pool, StopGrace: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != report.RunSucceeded {
			t.Fatalf("run %s: %s %+v", runID, rep.Status, rep.Jobs)
		}
		if _, err := os.Stat(filepath.Join(repo, ".pneuma", "worktrees", runID)); !os.IsNotExist(err) {
			t.Errorf("run %s left its worktree directory: %v", runID, err)
		}
		return p
	}
	spares := func() []string { return runner.RepoLayout(repo).Spares() }
	// worktrees returns `git worktree list --porcelain`, one entry a line.
	worktrees := func() []string {
		out := claudetest.Git(t, repo, "worktree", "list", "--porcelain")
		return strings.Split(strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(out, "\n\n", "\x00"), "\n", " ")), "\x00")
	}

	// Pool -1: as many as the concurrency.
	p := run("one", -1)
	if got := spares(); len(got) != 2 {
		t.Fatalf("spares after run one = %v, want 2", got)
	}
	wts := worktrees()
	if len(wts) != 3 {
		t.Fatalf("worktrees = %q, want the main one and 2 spares", wts)
	}
	for _, w := range wts[1:] {
		if !strings.Contains(w, " detached") || !strings.Contains(w, string(filepath.Separator)+"pool"+string(filepath.Separator)) {
			t.Errorf("a spare is not detached in the pool: %q", w)
		}
	}
	for _, job := range p.Jobs {
		// The job's branch is free: another worktree may check it out.
		claudetest.Git(t, repo, "rev-parse", "--verify", job.Branch)
		if strings.Contains(strings.Join(wts, " "), "refs/heads/"+job.Branch) {
			t.Errorf("branch %s is still checked out", job.Branch)
		}
	}

	// The next run reuses them; Pool 1 removes the second.
	run("two", 1)
	if got := spares(); len(got) != 1 {
		t.Fatalf("spares after run two = %v, want 1", got)
	}
	if wts := worktrees(); len(wts) != 2 {
		t.Errorf("worktrees after run two = %q", wts)
	}

	// A spare someone wrote in is neither reused nor removed.
	dirty := spares()[0]
	if err := os.WriteFile(filepath.Join(dirty, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = run("three", 0)
	if got := spares(); len(got) != 1 || got[0] != dirty {
		t.Errorf("spares after run three = %v, want only the dirty %s", got, dirty)
	}
	if data, err := os.ReadFile(filepath.Join(dirty, "notes.txt")); err != nil || string(data) != "mine\n" {
		t.Errorf("the dirty spare lost its file: %q %v", data, err)
	}
	for _, job := range p.Jobs {
		if out := claudetest.Git(t, repo, "ls-tree", "--name-only", job.Branch); strings.Contains(out, "notes.txt") {
			t.Errorf("job %s picked up the dirty spare's file", job.Name)
		}
	}
	if wts := worktrees(); len(wts) != 2 {
		t.Errorf("worktrees after run three = %q, want the main one and the dirty spare", wts)
	}
}
