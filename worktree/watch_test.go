package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

func TestWatch(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a change watch; elsewhere Untouched is always false")
	}
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	// fresh makes a worktree with a nested directory and watches it.
	n := 0
	fresh := func(t *testing.T) (string, *Watch) {
		t.Helper()
		n++
		dir := filepath.Join(repo, ".pneuma", "wt", strconv.Itoa(n))
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: dir, Branch: "w/" + strconv.Itoa(n), Base: "HEAD"}); err != nil {
			t.Fatal(err)
		}
		w := m.Watch(dir)
		t.Cleanup(func() { w.Close() })
		if !w.Untouched() {
			t.Fatal("a fresh watch is not untouched")
		}
		return dir, w
	}

	t.Run("reads change nothing", func(t *testing.T) {
		dir, w := fresh(t)
		if _, err := os.ReadFile(filepath.Join(dir, "src", "a.txt")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadDir(filepath.Join(dir, "src")); err != nil {
			t.Fatal(err)
		}
		// What the CLI runs at start: a status that takes no lock.
		if _, err := m.exec(ctx, run{args: []string{"-C", dir, "status", "--porcelain"}, env: []string{"GIT_OPTIONAL_LOCKS=0"}}); err != nil {
			t.Fatal(err)
		}
		gitT(t, m, dir, "log", "--oneline", "-1")
		if !w.Untouched() {
			t.Error("reading the worktree counted as a change")
		}
	})

	changes := []struct {
		name   string
		change func(t *testing.T, dir string)
	}{
		{"file rewritten in a subdirectory", func(t *testing.T, dir string) {
			writeFile(t, dir, "src/a.txt", "one\ntwo\nthree\n") // same content and size
		}},
		{"file created", func(t *testing.T, dir string) { writeFile(t, dir, "new.txt", "x") }},
		{"directory created", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "src", "empty"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"file deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
		}},
		{"mode changed", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, "src", "a.txt"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"file renamed", func(t *testing.T, dir string) {
			if err := os.Rename(filepath.Join(dir, "src", "a.txt"), filepath.Join(dir, "src", "b.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"index changed", func(t *testing.T, dir string) {
			// Nothing in the worktree, only the index: git rm --cached.
			gitT(t, m, dir, "rm", "-q", "--cached", "README.md")
		}},
		{"empty commit moves HEAD", func(t *testing.T, dir string) {
			gitT(t, m, dir, "commit", "-q", "--allow-empty", "-m", "empty")
		}},
		{"branch moved from the main worktree", func(t *testing.T, dir string) {
			branch := gitT(t, m, dir, "symbolic-ref", "HEAD")
			gitT(t, m, repo, "update-ref", "--no-deref", branch, "HEAD~1")
		}},
	}
	for _, tt := range changes {
		t.Run(tt.name, func(t *testing.T) {
			dir, w := fresh(t)
			tt.change(t, dir)
			if w.Untouched() {
				t.Error("Untouched after a change")
			}
			if w.Untouched() {
				t.Error("Untouched forgot the change")
			}
		})
	}

	t.Run("too many directories are not watched", func(t *testing.T) {
		dir, _ := fresh(t)
		for i := 0; i <= MaxWatchDirs; i++ {
			if err := os.Mkdir(filepath.Join(dir, "d"+strconv.Itoa(i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		w := m.Watch(dir)
		defer w.Close()
		if w.Untouched() {
			t.Error("a tree over MaxWatchDirs is Untouched")
		}
	})

	t.Run("detached HEAD is not watched", func(t *testing.T) {
		dir, _ := fresh(t)
		gitT(t, m, dir, "update-ref", "--no-deref", "HEAD", "HEAD")
		w := m.Watch(dir)
		defer w.Close()
		if w.Untouched() {
			t.Error("a detached worktree is Untouched")
		}
	})

	t.Run("not a worktree", func(t *testing.T) {
		w := m.Watch(t.TempDir())
		defer w.Close()
		if w.Untouched() {
			t.Error("a directory without .git is Untouched")
		}
	})

	t.Run("closed", func(t *testing.T) {
		_, w := fresh(t)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if w.Untouched() {
			t.Error("a closed watch is Untouched")
		}
	})

	var nilWatch *Watch
	if nilWatch.Untouched() || nilWatch.Close() != nil {
		t.Error("a nil Watch must be touched and close cleanly")
	}
}

// A worktree known untouched at the new base is reused without reading a
// file: same result as a checkout, and the index is not rewritten.
func TestReuseUntouched(t *testing.T) {
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base, err := m.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(repo, ".pneuma", "wt", "first")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: first, Branch: "job/first", Base: base}); err != nil {
		t.Fatal(err)
	}
	index := func(dir string) os.FileInfo {
		t.Helper()
		gd, err := gitDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(gd, "index"))
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	before := index(first)
	// A user's autoSetupMerge=always must not make the new branch track the
	// old job's (HEAD, the start of switch -c, names it).
	gitT(t, m, repo, "config", "branch.autoSetupMerge", "always")
	second := filepath.Join(repo, ".pneuma", "wt", "second")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: first, Path: second, Branch: "job/second", Base: base, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	after := index(second)
	if !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Error("the index was rewritten")
	}
	if list, _ := m.List(ctx, repo); len(list) != 2 || list[1].Path != second || list[1].Branch != "job/second" {
		t.Errorf("worktrees %+v", list)
	}
	if got := gitT(t, m, second, "symbolic-ref", "HEAD"); got != "refs/heads/job/second" {
		t.Errorf("HEAD = %s", got)
	}
	if head, _ := m.Head(ctx, second); head != base {
		t.Errorf("second is at %s, want %s", head, base)
	}
	if files, err := m.Status(ctx, second); err != nil || len(files) != 0 {
		t.Errorf("second is not clean: %v %v", files, err)
	}
	if got := gitT(t, m, repo, "rev-parse", "job/first"); got != base {
		t.Errorf("job/first moved to %s", got)
	}
	if log := gitT(t, m, second, "reflog", "-1", "--format=%gs", "job/second"); log != "branch: Created from HEAD" {
		t.Errorf("reflog of the new branch: %q", log)
	}
	if out, err := userGit(t, m, repo, "config", "--get-regexp", `^branch\.job/second\.`); err == nil || out != "" {
		t.Errorf("the new branch has settings (tracking?): %q", out)
	}

	// An existing branch is refused, and the new worktree is left as it was.
	gitT(t, m, repo, "branch", "job/taken", base)
	third := filepath.Join(repo, ".pneuma", "wt", "third")
	var exists *ExistsError
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: second, Path: third, Branch: "job/taken", Base: base, Untouched: true}); !errors.As(err, &exists) {
		t.Errorf("Reuse onto an existing branch = %v, want an ExistsError", err)
	}
	if _, err := os.Stat(second); err != nil {
		t.Errorf("a refused Reuse moved the worktree: %v", err)
	}

	// At another base, an untouched worktree is checked out as usual.
	older := gitT(t, m, repo, "rev-parse", "HEAD~1")
	fourth := filepath.Join(repo, ".pneuma", "wt", "fourth")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: second, Path: fourth, Branch: "job/fourth", Base: older, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	if head, _ := m.Head(ctx, fourth); head != older {
		t.Errorf("fourth is at %s, want %s", head, older)
	}
	if got, _ := os.ReadFile(filepath.Join(fourth, "README.md")); string(got) != "hello\n" {
		t.Errorf("README.md at the older base = %q", got)
	}
}

func TestWatchRearm(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a change watch")
	}
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base, err := m.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	path := func() string {
		n++
		return filepath.Join(repo, ".pneuma", "wt", strconv.Itoa(n))
	}
	// watched makes a worktree at base and watches it.
	watched := func(t *testing.T) (string, *Watch) {
		t.Helper()
		dir := path()
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: dir, Branch: "r/" + strconv.Itoa(n), Base: base}); err != nil {
			t.Fatal(err)
		}
		w := m.Watch(dir)
		t.Cleanup(func() { w.Close() })
		return dir, w
	}
	// reuse moves dir to a new path on a new branch at commit.
	reuse := func(t *testing.T, dir, commit string) string {
		t.Helper()
		to := path()
		if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: dir, Path: to, Branch: "r/" + strconv.Itoa(n), Base: commit, Untouched: true}); err != nil {
			t.Fatal(err)
		}
		return to
	}

	t.Run("a reuse is carried over, twice, and later changes are seen", func(t *testing.T) {
		dir, w := watched(t)
		for range 2 {
			dir = reuse(t, dir, base)
			if !w.Rearm(dir) || !w.Untouched() {
				t.Fatal("the events of a reuse counted as a change")
			}
		}
		writeFile(t, dir, "src/a.txt", "changed\n")
		if w.Untouched() {
			t.Error("a change after the reuse was not seen")
		}
	})

	t.Run("the new branch is watched", func(t *testing.T) {
		dir, w := watched(t)
		dir = reuse(t, dir, base)
		if !w.Rearm(dir) {
			t.Fatal("Rearm = false")
		}
		older := gitT(t, m, repo, "rev-parse", "HEAD~1")
		gitT(t, m, repo, "update-ref", "refs/heads/r/"+strconv.Itoa(n), older)
		if w.Untouched() {
			t.Error("the new branch moved and the watch did not see it")
		}
	})

	others := []struct {
		name   string
		before func(t *testing.T, dir string) // between the job and the reuse
		base   string
	}{
		{"a file changed before the reuse", func(t *testing.T, dir string) {
			writeFile(t, dir, "src/a.txt", "one\ntwo\nthree\n")
		}, base},
		{"the index rewritten", func(t *testing.T, dir string) {
			gitT(t, m, dir, "update-index", "--refresh", "--really-refresh")
			gitT(t, m, dir, "read-tree", "HEAD")
		}, base},
		{"a checkout of another base", nil, "HEAD~1"},
	}
	for _, tc := range others {
		t.Run(tc.name, func(t *testing.T) {
			dir, w := watched(t)
			if tc.before != nil {
				tc.before(t, dir)
			}
			commit := gitT(t, m, repo, "rev-parse", tc.base)
			dir = reuse(t, dir, commit)
			if w.Rearm(dir) || w.Untouched() {
				t.Error("Rearm vouched for a changed worktree")
			}
		})
	}

	t.Run("another worktree", func(t *testing.T) {
		_, w := watched(t)
		other, _ := watched(t)
		if w.Rearm(other) || w.Untouched() {
			t.Error("Rearm accepted another worktree")
		}
	})
}
