package worktree

// A Watch tells whether a worktree stayed untouched while a job ran in it,
// so that a job which changed nothing needs no scan of the tree afterwards.
// The scan is dear on a big tree: right after a checkout, git cannot trust
// the stat data it wrote in the same second as its index ("racy git"), so
// the first `git add -A` or `git status` reads and hashes every file.
//
// A Watch errs one way only: Untouched is true only when nothing in the
// worktree's files and directories, nor in its own git directory (index,
// HEAD), nor the branch it is on, can have changed since Watch returned. Whenever it cannot tell
// (no inotify on this system, more than MaxWatchDirs directories, the
// kernel's watch limit reached, a detached HEAD or a packed branch, an
// overflowed event queue) it says false,
// and the caller does the full scan it would have done anyway.
//
// Changes made through memory-mapped writes raise no inotify event; git's
// own change detection, which compares stat data, misses none of them but
// is what the watch exists to avoid. Agents edit files with write(2).
type Watch struct {
	impl watchImpl
}

// MaxWatchDirs bounds the directories one Watch observes (each costs the
// kernel an inotify watch, about 1 KiB, out of fs.inotify.max_user_watches).
// A bigger tree is not watched: its Watch is never Untouched.
const MaxWatchDirs = 10000

// Watch starts watching the worktree at dir (its directories, recursively,
// and its git directory). It never fails: a worktree it cannot watch gets a
// Watch that is never Untouched. Close it when done.
func (m *Manager) Watch(dir string) *Watch {
	return &Watch{impl: startWatch(dir)}
}

// Untouched reports whether nothing in the worktree changed since Watch.
// Once it has said false it keeps saying false.
func (w *Watch) Untouched() bool {
	if w == nil || w.impl == nil {
		return false
	}
	return w.impl.untouched()
}

// Rearm carries the watch over to a reuse of its worktree (Reuse with
// Untouched, at the same commit): the directory moved to dir and switched
// to a new branch at the commit it was on. It accepts the events those two
// steps cause (the worktree directory moved, its .git link and git
// directory's gitdir, HEAD and reflog rewritten) and nothing else, then
// watches the new branch, so the walk of a new Watch is saved. It returns
// false, and the watch is never Untouched again, when anything else
// happened, when dir is not the same worktree, or when the new branch is
// not at the same commit; the caller then starts a new Watch.
func (w *Watch) Rearm(dir string) bool {
	if w == nil || w.impl == nil {
		return false
	}
	return w.impl.rearm(dir)
}

// Close stops watching. It is safe to call more than once.
func (w *Watch) Close() error {
	if w == nil || w.impl == nil {
		return nil
	}
	return w.impl.close()
}

type watchImpl interface {
	untouched() bool
	rearm(dir string) bool
	close() error
}
