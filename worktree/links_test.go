package worktree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plantHooks makes every hook pneuma's git could meet, and core.fsmonitor,
// append their name to a marker file outside the repository, and returns
// a function that reads (and empties) it.
func plantHooks(t *testing.T, repo string) (ran func() string) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "ran")
	script := func(name string) string {
		return "#!/bin/sh\necho " + name + " >>'" + marker + "'\n"
	}
	hooks := filepath.Join(repo, ".git", "hooks")
	for _, h := range []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit",
		"post-checkout", "reference-transaction", "post-index-change", "post-rewrite"} {
		writeFile(t, hooks, h, script(h))
		if err := os.Chmod(filepath.Join(hooks, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A hook-style fsmonitor (git 2.39 runs the program core.fsmonitor names
	// on status and add); it fails, so git then scans as usual.
	fsmonitor := filepath.Join(t.TempDir(), "fsmonitor")
	writeFile(t, filepath.Dir(fsmonitor), "fsmonitor", script("fsmonitor")+"exit 1\n")
	if err := os.Chmod(fsmonitor, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.OpenFile(filepath.Join(repo, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.WriteString("[core]\n\tfsmonitor = " + fsmonitor + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Close(); err != nil {
		t.Fatal(err)
	}
	return func() string {
		data, err := os.ReadFile(marker)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		_ = os.Remove(marker)
		return strings.Join(strings.Fields(string(data)), " ")
	}
}

// TestNoAgentCode: hooks and an fsmonitor written into the repository (as
// an agent could) never run in pneuma's git, through a job's whole life:
// create, status, commit, diff, reuse (both ways), retire, remove.
func TestNoAgentCode(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	older := gitT(t, m, repo, "rev-parse", "HEAD~1")
	ran := plantHooks(t, repo)

	// The control: the user's git runs them, so the test can fail.
	control := filepath.Join(t.TempDir(), "control")
	if out, err := userGit(t, m, repo, "worktree", "add", "-q", "-b", "control", control, base); err != nil {
		t.Fatalf("git worktree add: %v: %s", err, out)
	}
	writeFile(t, control, "c.txt", "c\n")
	if out, err := userGit(t, m, control, "add", "-A"); err != nil {
		t.Fatalf("git add: %v: %s", err, out)
	}
	_, _ = userGit(t, m, control, "commit", "-q", "-m", "control") // pre-commit may refuse; it ran
	got := ran()
	for _, want := range []string{"post-checkout", "reference-transaction", "pre-commit", "fsmonitor"} {
		if !strings.Contains(got, want) {
			t.Fatalf("control: the user's git did not run %s (ran: %q)", want, got)
		}
	}

	root := filepath.Join(repo, ".pneuma")
	first := filepath.Join(root, "wt", "first")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: first, Branch: "job/first", Base: base}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, first, "work.txt", "work\n")
	if _, err := m.Status(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Changes(ctx, first); err != nil {
		t.Fatal(err)
	}
	head, committed, err := m.CommitAll(ctx, first, "", "leftovers")
	if err != nil || !committed {
		t.Fatalf("CommitAll = %v, %v", committed, err)
	}
	if _, err := m.DiffStat(ctx, first, base, head); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteDiff(ctx, first, base, head, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	// A checkout of the base, then the fast path at the same commit.
	second := filepath.Join(root, "wt", "second")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: first, Path: second, Branch: "job/second", Base: base}); err != nil {
		t.Fatal(err)
	}
	third := filepath.Join(root, "wt", "third")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: second, Path: third, Branch: "job/third", Base: base, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	fourth := filepath.Join(root, "wt", "fourth")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: third, Path: fourth, Branch: "job/fourth", Base: older, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	spare := filepath.Join(root, "pool", "spare")
	if err := m.Retire(ctx, repo, fourth, spare, false); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, repo, spare); err != nil {
		t.Fatal(err)
	}
	if got := ran(); got != "" {
		t.Errorf("pneuma's git ran the repository's hooks or fsmonitor: %s", got)
	}
}

// TestTampered: a worktree whose git links an agent changed is refused by
// every command that would run git in it, is never pooled or reused, and
// is never removed; its files stay.
func TestTampered(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	n := 0
	create := func(t *testing.T) string {
		t.Helper()
		n++
		dir := filepath.Join(repo, ".pneuma", "wt", "t"+string(rune('a'+n)))
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: dir, Branch: "t/" + filepath.Base(dir), Base: base}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	admin := func(t *testing.T, dir string) string {
		t.Helper()
		gd, err := gitDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return gd
	}
	other := create(t)   // another job's worktree, whose record a .git can name
	fakes := t.TempDir() // the agent's repositories, alive as long as the records naming them
	fake := func(t *testing.T) string {
		t.Helper()
		dir, err := os.MkdirTemp(fakes, "fake")
		if err != nil {
			t.Fatal(err)
		}
		gitT(t, m, dir, "init", "-q")
		return filepath.Join(dir, ".git")
	}

	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
	}{
		{".git names another worktree's record", func(t *testing.T, dir string) {
			writeFile(t, dir, ".git", "gitdir: "+admin(t, other)+"\n")
		}},
		{".git names a repository of the agent's", func(t *testing.T, dir string) {
			writeFile(t, dir, ".git", "gitdir: "+fake(t)+"\n")
		}},
		{".git replaced by a repository", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
			gitT(t, m, dir, "init", "-q")
		}},
		{".git made a symbolic link", func(t *testing.T, dir string) {
			link := filepath.Join(t.TempDir(), "dotgit")
			if err := os.Rename(filepath.Join(dir, ".git"), link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(link, filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}},
		{".git removed", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}},
		{"the record names another worktree", func(t *testing.T, dir string) {
			writeFile(t, admin(t, dir), "gitdir", filepath.Join(other, ".git")+"\n")
		}},
		{"the record names another repository", func(t *testing.T, dir string) {
			writeFile(t, admin(t, dir), "commondir", fake(t)+"\n")
		}},
		{"per-worktree settings written", func(t *testing.T, dir string) {
			writeFile(t, admin(t, dir), "config.worktree", "[core]\n\tfsmonitor = /bin/evil\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := create(t)
			writeFile(t, dir, "work.txt", "the agent's work\n")
			tt.tamper(t, dir)
			refused := func(what string, err error) {
				t.Helper()
				var te *TamperedError
				if !errors.As(err, &te) {
					t.Errorf("%s of a tampered worktree = %v; want a *TamperedError", what, err)
				}
			}
			_, err := m.Status(ctx, dir)
			refused("Status", err)
			_, _, err = m.CommitAll(ctx, dir, "", "leftovers")
			refused("CommitAll", err)
			_, err = m.DiffStat(ctx, dir, base, base)
			refused("DiffStat", err)
			_, err = m.Head(ctx, dir)
			refused("Head", err)
			refused("Retire", m.Retire(ctx, repo, dir, filepath.Join(repo, ".pneuma", "pool", filepath.Base(dir)), true))
			refused("Reuse", m.Reuse(ctx, ReuseOptions{Repo: repo, From: dir, Path: dir + "-reused", Branch: "r/" + filepath.Base(dir), Base: base, Untouched: true}))
			if err := m.Remove(ctx, repo, dir); err == nil {
				t.Error("Remove of a tampered worktree succeeded")
			}
			if data, err := os.ReadFile(filepath.Join(dir, "work.txt")); err != nil || string(data) != "the agent's work\n" {
				t.Errorf("the work in a tampered worktree was touched: %q, %v", data, err)
			}
			if refExists(t, m, repo, "refs/heads/r/"+filepath.Base(dir)) {
				t.Error("a refused Reuse created its branch")
			}

			// A Manager that did not make it (a spare of an earlier run) sees
			// the broken links too, or refuses it as no linked worktree.
			fresh := &Manager{Env: m.Env}
			if strings.HasPrefix(tt.name, "per-worktree") {
				return // what the settings were is known only to the Manager that made it
			}
			refused("Retire by another Manager", fresh.Retire(ctx, repo, dir, filepath.Join(repo, ".pneuma", "pool", filepath.Base(dir)), true))
		})
	}

	t.Run("untampered", func(t *testing.T) {
		dir := create(t)
		fresh := &Manager{Env: m.Env}
		if err := fresh.Retire(ctx, repo, dir, filepath.Join(repo, ".pneuma", "pool", "ok"), true); err != nil {
			t.Errorf("Retire of an untouched worktree by another Manager: %v", err)
		}
	})
}

// TestHeadTampered: an agent in a sandbox can write its worktree's record,
// HEAD included. A HEAD pointed at main (or detached) with a file left
// uncommitted must not make pneuma's commit of the leftovers move main,
// neither for the Manager that made the worktree nor for one that did not
// (given the job's branch); git itself, asked to commit, would.
func TestHeadTampered(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	main := gitT(t, m, repo, "rev-parse", "main")
	for i, head := range []string{"ref: refs/heads/main\n", "ref:refs/heads/main", main + "\n", "ref: refs/heads/h/0-other\n"} {
		branch := fmt.Sprintf("h/%d", i)
		dir := filepath.Join(repo, ".pneuma", "wt", fmt.Sprintf("h%d", i))
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: dir, Branch: branch, Base: "main"}); err != nil {
			t.Fatal(err)
		}
		gd, err := gitDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "work.txt", "the agent's work\n")
		writeFile(t, gd, "HEAD", head)
		fresh := &Manager{Env: m.Env}
		for name, mm := range map[string]*Manager{"maker": m, "another Manager": fresh} {
			_, _, err := mm.CommitAll(ctx, dir, branch, "leftovers")
			if te := (*TamperedError)(nil); !errors.As(err, &te) {
				t.Errorf("HEAD %q: CommitAll by the %s = %v; want a *TamperedError", head, name, err)
			}
		}
		if _, err := m.Head(ctx, dir); !errors.As(err, new(*TamperedError)) {
			t.Errorf("HEAD %q: Head = %v; want a *TamperedError", head, err)
		}
		if got := gitT(t, m, repo, "rev-parse", "main"); got != main {
			t.Fatalf("HEAD %q: pneuma's commit moved main from %s to %s", head, main, got)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "work.txt")); err != nil || string(data) != "the agent's work\n" {
			t.Errorf("the work in a tampered worktree was touched: %q, %v", data, err)
		}
	}

	// The control: without the branch to check, git commits on main.
	dir := filepath.Join(repo, ".pneuma", "wt", "h0")
	if _, _, err := (&Manager{Env: m.Env}).CommitAll(ctx, dir, "", "leftovers"); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, m, repo, "rev-parse", "main"); got == main {
		t.Fatal("the control commit did not move main: the test cannot fail")
	}

	t.Run("untampered", func(t *testing.T) {
		dir := filepath.Join(repo, ".pneuma", "wt", "ok")
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: dir, Branch: "h/ok", Base: "main"}); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "work.txt", "work\n")
		sha, committed, err := m.CommitAll(ctx, dir, "h/ok", "leftovers")
		if err != nil || !committed || gitT(t, m, repo, "rev-parse", "h/ok") != sha {
			t.Fatalf("CommitAll on its own branch = %s, %v, %v", sha, committed, err)
		}
		// Retired (detached) and reused on another branch: still its own.
		spare := filepath.Join(repo, ".pneuma", "pool", "ok")
		if err := m.Retire(ctx, repo, dir, spare, true); err != nil {
			t.Fatal(err)
		}
		again := filepath.Join(repo, ".pneuma", "wt", "ok2")
		if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: spare, Path: again, Branch: "h/ok2", Base: "main"}); err != nil {
			t.Fatal(err)
		}
		writeFile(t, again, "more.txt", "more\n")
		if _, committed, err := m.CommitAll(ctx, again, "h/ok2", "leftovers"); err != nil || !committed {
			t.Fatalf("CommitAll after reuse = %v, %v", committed, err)
		}
	})
}

// FuzzCheckLinks writes whatever the agent could into a worktree's .git
// file: checkLinks must pass it only when it still names the worktree's own
// record, for the Manager that made it and for one that did not.
func FuzzCheckLinks(f *testing.F) {
	m := testManager(f, identityConfig)
	repo := newRepo(f, m)
	dir := filepath.Join(repo, ".pneuma", "wt", "fuzz")
	if err := m.Create(testCtx(f), CreateOptions{Repo: repo, Path: dir, Branch: "fuzz", Base: "HEAD"}); err != nil {
		f.Fatal(err)
	}
	own, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		f.Fatal(err)
	}
	admin := strings.TrimSpace(strings.TrimPrefix(string(own), "gitdir: "))
	f.Add(string(own))
	f.Add("gitdir: " + admin + "/\n")
	f.Add("gitdir: " + filepath.Join(admin, "..", "fuzz") + "\r\n")
	f.Add("gitdir: " + filepath.Join(repo, ".git") + "\n")
	f.Add("gitdir: ../../../.git/worktrees/fuzz\n")
	f.Add("gitdir:\n")
	f.Add("")
	fresh := &Manager{Env: m.Env}
	f.Fuzz(func(t *testing.T, content string) {
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		names, found := strings.CutPrefix(strings.TrimRight(content, " \t\r\n"), "gitdir: ")
		ownRecord := found && names != "" && samePath(absIn(dir, names), admin)
		for _, mm := range []*Manager{m, fresh} {
			common, err := mm.checkLinks(dir)
			if err == nil && !ownRecord {
				t.Fatalf("checkLinks passed a .git of %q (common %q)", content, common)
			}
			if err != nil && ownRecord {
				t.Fatalf("checkLinks refused the worktree's own record %q: %v", content, err)
			}
		}
	})
}
