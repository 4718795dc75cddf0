package cmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/cmd"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/runner"
)

// A run keeps spare worktrees and says so; pneuma clean removes them.
func TestRunKeepsSparesAndCleanRemovesThem(t *testing.T) {
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{})
	path := writeJobs(t, repo, "version: 1\nconcurrency: 2\njobs:\n  - {name: one, prompt: x}\n  - {name: two, prompt: y}\n")
	r := run(t, "", nil, "run", "--claude", cli, "--stagger", "0", path)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "2 clean worktree(s) kept in .pneuma/pool") {
		t.Errorf("the run does not say it kept spares:\n%s", r.stdout)
	}
	if entries, _ := os.ReadDir(runner.RepoLayout(repo).Pool()); len(entries) != 2 {
		t.Fatalf("pool holds %d, want 2", len(entries))
	}

	r = run(t, filepath.Join(repo, ".pneuma"), nil, "clean")
	if r.code != 0 || !strings.Contains(r.stdout, "removed 2 spare worktree(s)") {
		t.Fatalf("clean: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(runner.RepoLayout(repo).Pool()); !os.IsNotExist(err) {
		t.Errorf("pool still there: %v", err)
	}
	if wts := claudetest.Git(t, repo, "worktree", "list"); strings.Count(wts, "\n") != 0 {
		t.Errorf("worktrees left:\n%s", wts)
	}

	r = run(t, "", nil, "clean", t.TempDir())
	if r.code != cmd.ExitEnvironment || !strings.Contains(r.stderr, "pneuma:") {
		t.Errorf("clean outside a repository: exit %d, stderr %q", r.code, r.stderr)
	}
}
