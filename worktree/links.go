package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A linked worktree is tied to its repository by two links: its .git file
// names its record in the common git dir (<common>/worktrees/<name>), and
// the record's gitdir file names the .git file back; the record's commondir
// names the common dir. An agent that writes in the worktree can rewrite the
// .git file (or replace it with a whole repository of its own), and git run
// there would then act on, and read the settings of, whatever the links now
// name: a config with filter or diff drivers, hooks, another object store.
// pneuma checks the links before it runs git in a worktree the agent wrote
// in, and refuses (*TamperedError) instead of guessing.

// TamperedError reports a worktree whose git metadata is not what pneuma
// made: its .git link, its record in the common git dir, or that record's
// per-worktree settings changed. pneuma runs no git command in it, never
// pools it and never removes it: its files stay where they are for a person
// to look at.
type TamperedError struct {
	Path   string
	Reason string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("worktree %s: its git metadata changed (%s); pneuma leaves it alone", e.Path, e.Reason)
}

// record is what a worktree this Manager made was linked to when it made
// it: its git dir, and its config.worktree ("" when it had none); the
// commit it checked out then (for Reuse of an untouched worktree); and the
// branch its HEAD names ("" detached, as a retired spare is).
type record struct {
	admin, config, head, branch string
}

// maxLink bounds what is read of a link file or config.worktree: git writes
// one line; anything bigger was not written by git.
const maxLink = 64 << 10

// remember notes the links of the worktree at dir, which this Manager has
// just created or moved there at commit head on branch ("" detached), for
// checkLinks.
func (m *Manager) remember(dir, head, branch string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	admin, err := gitDir(abs)
	if err != nil {
		return // checkLinks then checks that the links agree with each other only
	}
	cfg, err := readOptional(filepath.Join(admin, "config.worktree"))
	if err != nil {
		return
	}
	m.made.Store(abs, record{admin: filepath.Clean(admin), config: cfg, head: head, branch: branch})
}

// madeAt returns the commit the worktree at dir was made or moved at by
// this Manager, if it was.
func (m *Manager) madeAt(dir string) (head string, ok bool) {
	v, ok := m.made.Load(dir)
	if !ok || v.(record).head == "" {
		return "", false
	}
	return v.(record).head, true
}

// forget drops what remember noted of dir (it was moved or removed).
func (m *Manager) forget(dir string) {
	if abs, err := filepath.Abs(dir); err == nil {
		m.made.Delete(abs)
	}
}

// checkLinks makes sure that git run in the worktree at dir acts on the
// repository the worktree was made in and reads no setting the agent
// wrote for it: its .git is a file naming a record in a common git dir's
// worktrees directory, that record names dir's .git back and the common dir
// as its own, and, for a worktree this Manager made, the record is the one
// it made, its config.worktree is as it was and its HEAD still names the
// branch it was made on (see checkHead). It returns the common git
// dir, or "" for a directory that is no linked worktree this Manager made
// (a main worktree, whose .git is a directory, or no worktree at all: git
// decides there).
func (m *Manager) checkLinks(dir string) (common string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	v, known := m.made.Load(abs)
	dotGit := filepath.Join(abs, ".git")
	fi, err := os.Lstat(dotGit)
	if !known && (err != nil || fi.IsDir()) {
		return "", nil
	}
	bad := func(format string, a ...any) error {
		return &TamperedError{Path: abs, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case err != nil:
		return "", bad("its .git file is gone")
	case !fi.Mode().IsRegular():
		return "", bad(".git is no longer a file")
	}
	data, err := readLink(dotGit)
	if err != nil {
		return "", bad("read .git: %v", err)
	}
	admin, found := strings.CutPrefix(strings.TrimRight(data, " \t\r\n"), "gitdir: ")
	if !found || admin == "" {
		return "", bad(".git names no git directory")
	}
	admin = absIn(abs, admin)
	if filepath.Base(filepath.Dir(admin)) != "worktrees" {
		return "", bad(".git names %s, which is no worktree record", admin)
	}
	common = filepath.Dir(filepath.Dir(admin))
	if known && !samePath(v.(record).admin, admin) {
		return "", bad(".git names %s instead of its own record %s", admin, v.(record).admin)
	}
	if link, err := readLink(filepath.Join(admin, "commondir")); err != nil || !samePath(absIn(admin, strings.TrimSpace(link)), common) {
		return "", bad("the record %s does not name %s as its repository", admin, common)
	}
	if link, err := readLink(filepath.Join(admin, "gitdir")); err != nil || !samePath(absIn(admin, strings.TrimSpace(link)), dotGit) {
		return "", bad("the record %s names another worktree", admin)
	}
	if known {
		if cfg, err := readOptional(filepath.Join(admin, "config.worktree")); err != nil || cfg != v.(record).config {
			return "", bad("its settings (%s) changed", filepath.Join(admin, "config.worktree"))
		}
		if err := checkHead(abs, admin, v.(record).branch); err != nil {
			return "", err
		}
	}
	return common, nil
}

// checkHead makes sure that the HEAD in the worktree's git dir admin
// names branch (refs/heads/<branch>), or, for branch "", no branch at all
// (a detached HEAD). The record is writable inside a sandbox (git there
// commits on the job's branch through it), so an agent can point HEAD at
// another branch, main say; pneuma's own `git commit` of the leftovers,
// run outside, would then move that branch. Only the file is read: git is
// not asked, since it would follow whatever HEAD now says.
func checkHead(abs, admin, branch string) error {
	data, err := readLink(filepath.Join(admin, "HEAD"))
	if err != nil {
		return &TamperedError{Path: abs, Reason: fmt.Sprintf("read HEAD: %v", err)}
	}
	head := strings.TrimRight(data, " \t\r\n")
	target, symbolic := strings.CutPrefix(head, "ref:")
	target = strings.TrimSpace(target)
	switch {
	case branch == "" && symbolic:
		return &TamperedError{Path: abs, Reason: fmt.Sprintf("HEAD names %.200q; it was detached", target)}
	case branch != "" && (!symbolic || target != "refs/heads/"+branch):
		return &TamperedError{Path: abs, Reason: fmt.Sprintf("HEAD is %.200q, not its branch %s", head, branch)}
	}
	return nil
}

// checkOwn is checkLinks for a worktree that must be a linked worktree of
// repo: Reuse and Retire hand it on to another job, so a directory that is
// no linked worktree, or one of another repository, is refused too.
func (m *Manager) checkOwn(common, dir string) error {
	got, err := m.checkLinks(dir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir) // checkLinks made it absolute already
	switch {
	case got == "":
		return &TamperedError{Path: abs, Reason: "it is no linked worktree"}
	case !samePath(got, common):
		return &TamperedError{Path: abs, Reason: fmt.Sprintf("it belongs to the repository at %s, not %s", got, common)}
	}
	return nil
}

// readLink reads a small regular file without following a symbolic link at
// its name and without blocking on a named pipe put in its place.
func readLink(p string) (string, error) {
	data, err := readSmall(p, maxLink)
	return string(data), err
}

// readOptional is readLink for a file that may not exist ("").
func readOptional(p string) (string, error) {
	data, err := readLink(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return data, err
}
