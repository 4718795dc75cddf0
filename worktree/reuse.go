package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ReuseOptions moves a finished job's clean worktree to a new job.
type ReuseOptions struct {
	Repo   string
	From   string // a clean linked worktree of Repo
	Path   string // where the new job's worktree goes
	Branch string // the new job's branch, created at Base; must not exist
	Base   string
	// Untouched says the caller knows From is still exactly the checkout
	// it was made as (a Watch said so): Reuse then skips the scan for
	// uncommitted work, and when From is already at Base it only creates
	// the branch, points HEAD at it and moves the directory, reading no
	// file of the tree.
	Untouched bool
}

// Reuse turns a clean linked worktree into a new one with git's own
// commands: it checks out a new Branch at Base (`checkout -f -b`, which
// writes only the files that differ), deletes every untracked and ignored
// file (`clean -ffdx`) and moves the directory to Path (`worktree move`), so
// the result is exactly what Create would make at a fraction of its cost on
// a big tree. When o.Untouched and From is at Base already, the checkout and
// clean are one `switch -c` (refusing a branch that exists), which leaves
// the index and the files as they are.
//
// It refuses a worktree with uncommitted work (*DirtyError), whose files
// the checkout would overwrite, and one whose git metadata changed
// (*TamperedError). An existing Branch is an *ExistsError. On any error
// the worktree is left at From, on its old branch or detached.
func (m *Manager) Reuse(ctx context.Context, o ReuseOptions) error {
	if err := m.reuse(ctx, o); err != nil {
		return fmt.Errorf("reuse worktree %s as %s: %w", o.From, o.Path, err)
	}
	return nil
}

func (m *Manager) reuse(ctx context.Context, o ReuseOptions) error {
	if err := ValidBranch(o.Branch); err != nil {
		return err
	}
	from, err := filepath.Abs(o.From)
	if err != nil {
		return err
	}
	to, err := filepath.Abs(o.Path)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return &ExistsError{Kind: "path", Name: to}
	}
	sha, err := m.ResolveRef(ctx, o.Repo, o.Base)
	if err != nil {
		return err
	}
	common, err := m.commonDir(ctx, o.Repo)
	if err != nil {
		return err
	}
	if err := m.checkOwn(common, from); err != nil {
		return err
	}
	// As it was made, at the new base: the files are already right.
	same := false
	if o.Untouched {
		// Untouched since it was made: at the commit it was made at.
		head, ok := m.madeAt(from)
		if !ok {
			head, err = m.Head(ctx, from)
		}
		same = err == nil && head == sha
	} else {
		files, err := m.Status(ctx, from)
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return &DirtyError{Path: from, Files: files}
		}
	}
	if same {
		err = m.branchHere(ctx, from, o.Branch)
	} else {
		err = m.checkoutNew(ctx, from, o.Branch, sha)
	}
	if err != nil {
		return err
	}
	unlock, err := m.lock(ctx, common)
	if err == nil {
		err = m.move(ctx, o.Repo, from, to)
		unlock()
	}
	if err != nil {
		m.undoBranch(ctx, from, o.Branch, sha)
		return err
	}
	m.remember(to, sha, o.Branch)
	return nil
}

// branchHere creates branch at sha, the commit the worktree at dir has
// checked out, and points its HEAD at it, in one git process: `switch -c`
// without a start point, which refuses a branch that exists and, the commit
// being the one checked out already, neither reads nor writes the index or
// any file of the worktree (git skips the checkout of the tree when a new
// branch starts at HEAD: no `index` or `unpack_trees` region in its trace).
// --no-track: the start is HEAD, which names the old job's branch, and a
// user's branch.autoSetupMerge=always must not make the new branch track it.
// The caller has checked that HEAD is at sha; the reflog says "Created from
// HEAD".
func (m *Manager) branchHere(ctx context.Context, dir, branch string) error {
	if err := m.quiet(ctx, "-C", dir, "switch", "--quiet", "--no-track", "-c", branch); err != nil {
		return branchError(err, branch)
	}
	return nil
}

// checkoutNew switches the clean worktree at dir to a new branch at sha and
// deletes its untracked and ignored files. -f: the tree was clean, so what
// it overwrites is nothing a job made; only the files that differ are
// written. -b, not -B: an existing branch is refused, never reset.
func (m *Manager) checkoutNew(ctx context.Context, dir, branch, sha string) error {
	if _, err := m.output(ctx, "-C", dir, "checkout", "--quiet", "-f", "--no-recurse-submodules", "-b", branch, sha); err != nil {
		return branchError(err, branch)
	}
	if _, err := m.output(ctx, "-C", dir, "clean", "-ffdxq"); err != nil {
		m.undoBranch(ctx, dir, branch, sha)
		return err
	}
	return nil
}

// branchError is an *ExistsError when git refused to create branch because
// it exists, else err.
func branchError(err error, branch string) error {
	var ce *CommandError
	if errors.As(err, &ce) && (strings.Contains(ce.Stderr, "reference already exists") || strings.Contains(ce.Stderr, "a branch named")) {
		return &ExistsError{Kind: "branch", Name: branch}
	}
	return err
}

// undoBranch takes back a reuse that failed after the worktree at dir was
// switched to branch at sha: HEAD detached at sha, then the branch deleted
// (two commands: git refuses both in one transaction, as HEAD names the
// branch), so that the next attempt, or Create, can make the branch again.
// Best effort: the failure that led here is the one to report.
func (m *Manager) undoBranch(ctx context.Context, dir, branch, sha string) {
	cctx, cancel := cleanupCtx(ctx)
	defer cancel()
	if _, err := m.output(cctx, "-C", dir, "update-ref", "--no-deref", "-m", "pneuma: reuse undone", "HEAD", sha); err == nil {
		m.remember(dir, sha, "") // detached at sha: what checkLinks expects from now on
		_, _ = m.output(cctx, "-C", dir, "update-ref", "-d", "refs/heads/"+branch, sha)
	}
}

// cleanupCtx bounds a clean-up that must run even when ctx is cancelled.
func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// Retire turns the clean linked worktree at path into a spare for a later
// Reuse: it detaches HEAD from the branch (`update-ref --no-deref HEAD`, at
// the same commit, so the index and files stay as they are, and the branch
// is free to be checked out elsewhere or deleted) and moves the directory
// to `to` (`worktree move`). It refuses a worktree with uncommitted work
// (*DirtyError) and one whose git metadata changed (*TamperedError: the
// caller keeps it where it is and pools nothing); clean says the caller
// knows there is no uncommitted work (it has just committed everything, or
// checked), which saves a scan of the tree.
func (m *Manager) Retire(ctx context.Context, repo, path, to string, clean bool) error {
	if err := m.retire(ctx, repo, path, to, clean); err != nil {
		return fmt.Errorf("retire worktree %s to %s: %w", path, to, err)
	}
	return nil
}

func (m *Manager) retire(ctx context.Context, repo, path, to string, clean bool) error {
	to, err := filepath.Abs(to)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(to); err == nil {
		return &ExistsError{Kind: "path", Name: to}
	}
	common, err := m.commonDir(ctx, repo)
	if err != nil {
		return err
	}
	if err := m.checkOwn(common, path); err != nil {
		return err
	}
	if !clean {
		files, err := m.Status(ctx, path)
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return &DirtyError{Path: path, Files: files}
		}
	}
	head, err := m.Head(ctx, path)
	if err != nil {
		return err
	}
	if err := m.quiet(ctx, "-C", path, "update-ref", "--no-deref", "-m", "pneuma: retired", "HEAD", head); err != nil {
		return err
	}
	m.remember(path, head, "") // detached now, should the move fail
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	unlock, err := m.lock(ctx, common)
	if err != nil {
		return err
	}
	err = m.move(ctx, repo, path, to)
	unlock()
	if err != nil {
		return err
	}
	m.remember(to, head, "")
	return nil
}

// move moves the linked worktree at from to to (`git worktree move`); the
// caller holds the repository's lock, and remembers the worktree at to.
func (m *Manager) move(ctx context.Context, repo, from, to string) error {
	if err := m.quiet(ctx, "-C", repo, "worktree", "move", "--", from, to); err != nil {
		return err
	}
	m.forget(from)
	return nil
}
