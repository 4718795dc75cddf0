package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReuseUndone: a reuse that git refuses half way (here the move of a
// locked worktree) leaves the worktree where it was, detached, and takes
// its new branch back, so that Create can make that branch again.
func TestReuseUndone(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	older := gitT(t, m, repo, "rev-parse", "HEAD~1")
	for _, tc := range []struct {
		name      string
		base      string
		untouched bool
	}{{"fast", base, true}, {"checkout", older, false}} {
		t.Run(tc.name, func(t *testing.T) {
			from := filepath.Join(repo, ".pneuma", "wt", "from-"+tc.name)
			if err := m.Create(ctx, CreateOptions{Repo: repo, Path: from, Branch: "from/" + tc.name, Base: base}); err != nil {
				t.Fatal(err)
			}
			gitT(t, m, repo, "worktree", "lock", from)
			to := filepath.Join(repo, ".pneuma", "wt", "to-"+tc.name)
			branch := "to/" + tc.name
			err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: from, Path: to, Branch: branch, Base: tc.base, Untouched: tc.untouched})
			if err == nil {
				t.Fatal("Reuse of a locked worktree succeeded")
			}
			if _, err := os.Stat(filepath.Join(from, "README.md")); err != nil {
				t.Errorf("the worktree is not where it was: %v", err)
			}
			if refExists(t, m, repo, "refs/heads/"+branch) {
				t.Errorf("the failed Reuse left branch %s behind", branch)
			}
			if got := gitT(t, m, repo, "rev-parse", "from/"+tc.name); got != base {
				t.Errorf("the old branch moved to %s", got)
			}
			gitT(t, m, repo, "worktree", "unlock", from)
			if err := m.Remove(ctx, repo, from); err != nil {
				t.Errorf("Remove after a failed Reuse: %v", err)
			}
			if err := m.Create(ctx, CreateOptions{Repo: repo, Path: to, Branch: branch, Base: tc.base}); err != nil {
				t.Errorf("Create after a failed Reuse: %v", err)
			}
		})
	}

	// An existing branch is refused before anything changes, on both paths.
	for _, untouched := range []bool{true, false} {
		name := "taken-from-" + strconv.FormatBool(untouched)
		from := filepath.Join(repo, ".pneuma", "wt", name)
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: from, Branch: name, Base: base}); err != nil {
			t.Fatal(err)
		}
		gitT(t, m, repo, "branch", "-f", "taken", older)
		err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: from, Path: from + "-to", Branch: "taken", Base: base, Untouched: untouched})
		var ee *ExistsError
		if !errors.As(err, &ee) || ee.Kind != "branch" {
			t.Errorf("Reuse onto an existing branch (untouched %v) = %v; want an ExistsError", untouched, err)
		}
		if got := gitT(t, m, repo, "rev-parse", "taken"); got != older {
			t.Errorf("Reuse moved the existing branch to %s", got)
		}
		if got := gitT(t, m, from, "symbolic-ref", "HEAD"); got != "refs/heads/"+name {
			t.Errorf("a refused Reuse switched HEAD to %s", got)
		}
		if err := m.Remove(ctx, repo, from); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReuseProcesses counts the git processes of the paths every job of a
// run takes, so that one more is a decision, not an accident: a reuse of an
// untouched worktree at its commit is switch -c and worktree move; a
// retire is update-ref and worktree move.
func TestReuseProcesses(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	first := filepath.Join(repo, ".pneuma", "wt", "first")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: first, Branch: "job/first", Base: base}); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(repo, ".pneuma", "wt", "second")
	before := m.spawned.Load()
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: first, Path: second, Branch: "job/second", Base: base, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	if n := m.spawned.Load() - before; n != 2 {
		t.Errorf("Reuse of an untouched worktree started %d git processes, want 2", n)
	}
	before = m.spawned.Load()
	if err := m.Retire(ctx, repo, second, filepath.Join(repo, ".pneuma", "pool", "spare"), true); err != nil {
		t.Fatal(err)
	}
	if n := m.spawned.Load() - before; n != 2 {
		t.Errorf("Retire started %d git processes, want 2", n)
	}
}
