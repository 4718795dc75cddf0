package worktree

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestFileRefsLikeGit reuses and retires worktrees twice, once through
// git (a Manager that sees GIT_COMMITTER_DATE leaves every write to git) and
// once through the file writes, and compares what each left in the
// repository: refs, HEADs, reflogs (times aside), worktree records, and
// what git itself says about them.
func TestFileRefsLikeGit(t *testing.T) {
	for _, logAll := range []bool{true, false} {
		name := "reflogs"
		if !logAll {
			name = "no_reflogs"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := identityConfig
			if !logAll {
				cfg += "[core]\n\tlogAllRefUpdates = false\n"
			}
			fast := testManager(t, cfg)
			repo := newRepo(t, fast)
			slow := &Manager{Env: append(fast.Env[:len(fast.Env):len(fast.Env)], "GIT_COMMITTER_DATE=1700000000 +0000")}
			if fast.fileRefs(testCtx(t), repo) == nil {
				t.Fatal("the file writes are off for a plain repository")
			}
			if slow.fileRefs(testCtx(t), repo) != nil {
				t.Fatal("the file writes are on with GIT_COMMITTER_DATE set")
			}
			base := gitT(t, fast, repo, "rev-parse", "HEAD")
			got := reuseAndRetire(t, fast, repo, "fast", base)
			want := reuseAndRetire(t, slow, repo, "slow", base)
			for k, w := range want {
				if g := got[k]; g != w {
					t.Errorf("%s:\n file writes %q\n git         %q", k, g, w)
				}
			}
			if out := gitT(t, fast, repo, "fsck", "--no-progress"); out != "" {
				t.Errorf("git fsck: %s", out)
			}
		})
	}
}

// reuseAndRetire creates a worktree, reuses it for a new branch at the same
// base, retires it, and returns what the repository then holds about it,
// with names and times made comparable.
func reuseAndRetire(t *testing.T, m *Manager, repo, tag, base string) map[string]string {
	t.Helper()
	ctx := testCtx(t)
	dir := filepath.Join(repo, ".pneuma", tag)
	first, second, spare := filepath.Join(dir, "first"), filepath.Join(dir, "second"), filepath.Join(dir, "pool", "spare")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: first, Branch: tag + "/first", Base: base}); err != nil {
		t.Fatal(err)
	}
	admin, err := gitDir(first)
	if err != nil {
		t.Fatal(err)
	}
	spawned := m.spawned.Load()
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: first, Path: second, Branch: tag + "/second", Base: base, Untouched: true}); err != nil {
		t.Fatal(err)
	}
	gits := m.spawned.Load() - spawned
	state := map[string]string{}
	common := filepath.Join(repo, ".git")
	read := func(key, file string) {
		data, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) {
			data = []byte("(none)")
		} else if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), tag, "TAG")
		s = strings.ReplaceAll(s, filepath.Base(admin), "ID")
		state[key] = regexp.MustCompile(`> \d+ [-+]\d{4}(\t|\n)`).ReplaceAllString(s, "> TIME$1")
	}
	read("branch", filepath.Join(common, "refs", "heads", tag, "second"))
	read("branch reflog", filepath.Join(common, "logs", "refs", "heads", tag, "second"))
	read("HEAD after reuse", filepath.Join(admin, "HEAD"))
	read("gitdir after reuse", filepath.Join(admin, "gitdir"))
	state["listed after reuse"] = listed(t, m, repo, second, tag)
	state["status"] = strings.ReplaceAll(gitT(t, m, second, "status", "--porcelain=v1", "--branch"), tag, "TAG")

	spawned = m.spawned.Load()
	if err := m.Retire(ctx, repo, second, spare, true); err != nil {
		t.Fatal(err)
	}
	gits += m.spawned.Load() - spawned
	if fast := m.fileRefs(ctx, repo) != nil; fast && gits != 0 || !fast && gits != 5 {
		t.Errorf("Reuse and Retire started %d git processes (file writes %v)", gits, fast)
	}
	read("HEAD after retire", filepath.Join(admin, "HEAD"))
	read("HEAD reflog", filepath.Join(admin, "logs", "HEAD"))
	read("gitdir after retire", filepath.Join(admin, "gitdir"))
	state["listed after retire"] = listed(t, m, repo, spare, tag)
	state["prune"] = gitT(t, m, repo, "worktree", "prune", "--dry-run", "--verbose")
	for _, p := range []string{first, second} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", p, err)
		}
	}
	return state
}

// listed returns git's record of the worktree at path.
func listed(t *testing.T, m *Manager, repo, path, tag string) string {
	t.Helper()
	list, err := m.List(testCtx(t), repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Path == path {
			in.Path = strings.ReplaceAll(in.Path, tag, "TAG")
			in.Branch = strings.ReplaceAll(in.Branch, tag, "TAG")
			return fmt.Sprintf("%+v", in)
		}
	}
	return "(not listed)"
}

// TestFileRefsLeaveToGit covers what the file writes must not decide: each
// case ends as git would end it.
func TestFileRefsLeaveToGit(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	wt := filepath.Join(repo, ".pneuma", "wt")
	cur := filepath.Join(wt, "a")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: cur, Branch: "job/a", Base: base}); err != nil {
		t.Fatal(err)
	}
	next := func(name, branch string) error {
		t.Helper()
		to := filepath.Join(wt, name)
		err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: cur, Path: to, Branch: branch, Base: base, Untouched: true})
		if err == nil {
			cur = to
		}
		return err
	}

	// A packed branch of that name exists: refused before anything moves.
	gitT(t, m, repo, "branch", "packed", base)
	gitT(t, m, repo, "pack-refs", "--all")
	if err := next("b", "packed"); !errors.As(err, new(*ExistsError)) {
		t.Errorf("onto a packed branch: %v, want an ExistsError", err)
	}
	// A packed ref is a directory of the new branch: git's error, no branch.
	if err := next("c", "packed/x"); err == nil || errors.As(err, new(*ExistsError)) {
		t.Errorf("under a packed branch: %v, want git's error", err)
	}
	if _, sure := refFileExists(repo, "refs/heads/packed/x"); !sure {
		t.Error("a ref file under a packed branch")
	}
	cur = filepath.Join(wt, "c") // the move happened; the branch did not

	// Someone holds the branch's lock: git's lock error, and the lock is theirs.
	lock := filepath.Join(repo, ".git", "refs", "heads", "job", "d.lock")
	if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := next("d", "job/d"); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("with the branch locked: %v, want git's lock error", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the other process's lock is gone: %v", err)
	}
	cur = filepath.Join(wt, "d")

	// An empty directory where the branch goes: git removes it.
	if err := os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads", "job", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := next("dir", "job/dir"); err != nil {
		t.Errorf("onto an empty directory of refs: %v", err)
	}

	// A stale record (its directory deleted, not pruned) names the
	// destination: git refuses, and the live worktree keeps its record.
	stale := filepath.Join(wt, "stale")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: stale, Branch: "job/stale", Base: base}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stale); err != nil {
		t.Fatal(err)
	}
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: cur, Path: stale, Branch: "job/onstale", Base: base, Untouched: true}); err == nil {
		t.Error("a move onto a path a stale record names succeeded")
	}
	gitT(t, m, repo, "worktree", "prune")
	if got := gitT(t, m, cur, "rev-parse", "--abbrev-ref", "HEAD"); got != "job/dir" {
		t.Errorf("after prune the live worktree is on %q", got)
	}

	// A locked worktree is git's to refuse, and stays where it is.
	gitT(t, m, repo, "worktree", "lock", cur)
	if err := next("e", "job/e"); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("a locked worktree: %v, want git's refusal", err)
	}
	if _, err := os.Stat(cur); err != nil {
		t.Errorf("the locked worktree moved: %v", err)
	}
	gitT(t, m, repo, "worktree", "unlock", cur)

	// A relative .git link (git 2.48's worktree.useRelativePaths) would
	// break if the directory moved to another depth: git's to move.
	gd, err := gitDir(cur)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(cur, gd)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cur, ".git", "gitdir: "+rel+"\n")
	fr := m.fileRefs(ctx, repo)
	if _, err := fr.moveLinked(cur, filepath.Join(wt, "deeper", "e")); !errors.Is(err, errNotPlain) {
		t.Errorf("moveLinked with a relative link: %v, want errNotPlain", err)
	}
	writeFile(t, cur, ".git", "gitdir: "+gd+"\n")
	if err := next("f", "job/f"); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, m, cur, "symbolic-ref", "HEAD"); got != "refs/heads/job/f" {
		t.Errorf("HEAD = %s", got)
	}
}

func TestGitBool(t *testing.T) {
	for _, tc := range []struct {
		in     string
		on, ok bool
	}{{"true", true, true}, {"Yes", true, true}, {"1", true, true}, {"", false, true}, {"on", true, true},
		{"false", false, true}, {"off", false, true}, {"0", false, true}, {"always", false, false}, {"2", false, false}} {
		if on, ok := gitBool(tc.in); on != tc.on || ok != tc.ok {
			t.Errorf("gitBool(%q) = %v, %v; want %v, %v", tc.in, on, ok, tc.on, tc.ok)
		}
	}
	if got := identWithoutDate("A B <a@b.c> 1700000000 +0100"); got != "A B <a@b.c>" {
		t.Errorf("identWithoutDate = %q", got)
	}
}

// TestFileRefsOff lists the repositories whose refs only git writes.
func TestFileRefsOff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string
		hook         bool
		on           bool
	}{
		{name: "plain", on: true},
		{name: "logAllRefUpdates always", config: "[core]\n\tlogAllRefUpdates = always\n", on: true},
		{name: "shared repository", config: "[core]\n\tsharedRepository = group\n"},
		{name: "symlink refs", config: "[core]\n\tpreferSymlinkRefs = true\n"},
		{name: "relative hooks path", config: "[core]\n\thooksPath = .githooks\n"},
		{name: "reference-transaction hook", hook: true},
		{name: "hook by configuration", config: "[hook \"audit\"]\n\tevent = reference-transaction\n\tcommand = true\n"},
		{name: "files ref storage", config: "[extensions]\n\trefStorage = files\n", on: true},
		{name: "other ref storage", config: "[extensions]\n\trefStorage = reftable\n"},
		{name: "relative worktree links", config: "[worktree]\n\tuseRelativePaths = true\n"},
		{name: "settings per worktree", config: "[extensions]\n\tworktreeConfig = true\n"},
		{name: "fsync", config: "[core]\n\tfsync = all\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := testManager(t, identityConfig+tc.config)
			repo := newRepo(t, m)
			if tc.hook {
				writeFile(t, filepath.Join(repo, ".git", "hooks"), "reference-transaction", "#!/bin/sh\n")
			}
			if got := m.fileRefs(testCtx(t), repo) != nil; got != tc.on {
				t.Errorf("file writes on = %v, want %v", got, tc.on)
			}
		})
	}
}

// FuzzPackedConflict feeds packed-refs files of any content: the check
// never panics, and says a branch exists exactly when a ref line names it.
func FuzzPackedConflict(f *testing.F) {
	f.Add([]byte("# pack-refs with: peeled fully-peeled sorted \n0123 refs/heads/job/a\n^4567\n"), "job/a")
	f.Add([]byte("0123 refs/heads/job\n"), "job/a")
	f.Add([]byte("\r\n\n 0123 refs/heads/x\r\n"), "x")
	f.Add([]byte("0 refs/heads/x/y\n0 refs/heads/x\n"), "x")
	f.Fuzz(func(t *testing.T, packed []byte, branch string) {
		ref := "refs/heads/" + branch
		if checkRef(ref, false) != nil {
			return
		}
		common := t.TempDir()
		if err := os.WriteFile(filepath.Join(common, "packed-refs"), packed, 0o644); err != nil {
			t.Fatal(err)
		}
		err := (&fileRefs{common: common}).packedConflict(ref)
		named := false
		for line := range strings.Lines(string(packed)) {
			if line[0] != '#' && line[0] != '^' {
				if _, name, ok := strings.Cut(strings.TrimRight(line, "\r\n"), " "); ok && name == ref {
					named = true
				}
			}
		}
		// With a conflicting line too (git never writes both), git may decide.
		if got := errors.As(err, new(*ExistsError)); got && !named || named && !got && !errors.Is(err, errNotPlain) {
			t.Errorf("packedConflict(%q) = %v with a line naming it: %v", ref, err, named)
		}
	})
}
