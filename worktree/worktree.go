// Package worktree manages the git worktrees pneuma runs jobs in: it finds
// the repository, resolves base refs, creates one linked worktree per job on
// its own branch, inspects and commits what a job left behind, produces its
// diff, reuses and parks clean worktrees, and removes them afterwards while
// keeping the branch.
//
// git writes git's files: every command that changes a repository
// (worktree add/move/remove, update-ref, switch, checkout, add,
// commit) and status go through the git CLI; go-git v5 cannot create
// linked worktrees and is much slower than git on big trees. Refs are read
// with go-git, with the git CLI as the fallback for anything it cannot
// answer.
//
// pneuma's git never runs code an agent could have written: every command
// starts with core.hooksPath=/dev/null and an empty core.fsmonitor, and
// before git runs in a worktree a job wrote in, its links to the repository
// are checked (links.go): a worktree whose git metadata changed is left
// alone (*TamperedError).
//
// Nothing here discards uncommitted work. There is no `worktree remove
// --force`, and a worktree with uncommitted changes (per git status,
// untracked files included) is never removed or reused (*DirtyError).
// `reset --hard` and `clean` run only where that cannot lose work: Create
// runs `reset --hard` in a worktree it has just added with --no-checkout (no
// files yet), and Reuse runs `checkout -f` and `clean -ffdx` only in a
// worktree whose status is clean, so what they delete is ignored files
// (build output), never a job's changes.
package worktree

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Manager runs git for pneuma. The zero value is ready to use; a Manager must
// not be copied after first use. Share one Manager per process: it
// serialises worktree creation and removal per repository, which is what
// makes concurrent Create calls in one repository safe.
type Manager struct {
	// Git is the git binary, "git" (looked up in PATH) when empty.
	Git string
	// Env is appended to the environment of every git command and wins over
	// inherited variables (tests use it to isolate HOME and GIT_CONFIG_GLOBAL).
	Env []string

	mu      sync.Mutex
	locks   map[string]chan struct{} // per git common dir, capacity 1
	commons map[string]string        // repository path → its common git dir

	// commits holds the shas read as commit objects, per object store
	// (commitKey): objects never change, so the next ResolveRef of the same
	// sha, or of a ref pointing at it, needs not read it again (with go-git
	// that is decoding a pack index, ~10 ms on a big repository).
	commits sync.Map

	// gitPath is Git looked up in PATH once: a lookup per command stats
	// every PATH entry, and a run starts a few git commands per job.
	gitOnce sync.Once
	gitPath string

	// spawned counts git processes started (tests check the paths that
	// should start none).
	spawned atomic.Int64

	// made holds a record per worktree this Manager created or moved
	// (by absolute path), for checkLinks.
	made sync.Map
}

// New returns a Manager that runs "git" from PATH.
func New() *Manager { return &Manager{} }

// NotRepoError reports a directory that is not inside a git working tree.
type NotRepoError struct {
	Path string
	Err  error
}

func (e *NotRepoError) Error() string {
	return fmt.Sprintf("%s is not a git repository: %v", e.Path, e.Err)
}

func (e *NotRepoError) Unwrap() error { return e.Err }

// RefError reports a ref or revision that does not name a commit in Repo.
type RefError struct {
	Repo, Ref string
	Err       error
}

func (e *RefError) Error() string {
	return fmt.Sprintf("ref %q does not name a commit in %s: %v", e.Ref, e.Repo, e.Err)
}

func (e *RefError) Unwrap() error { return e.Err }

// DirtyError is returned by Remove for a worktree with uncommitted changes or
// untracked files; the worktree is left untouched.
type DirtyError struct {
	Path  string
	Files []string // as reported by Status
}

func (e *DirtyError) Error() string {
	const show = 5
	files := e.Files
	more := ""
	if len(files) > show {
		more = fmt.Sprintf(" and %d more", len(files)-show)
		files = files[:show]
	}
	return fmt.Sprintf("refusing to remove worktree %s: %d uncommitted change(s): %s%s",
		e.Path, len(e.Files), strings.Join(files, ", "), more)
}

// DirtyFiles lists the uncommitted paths (callers that only know the
// method, not the type, test for it).
func (e *DirtyError) DirtyFiles() []string { return e.Files }

// ExistsError is returned by Create when the branch or the worktree
// directory already exists. It matches errors.Is(err, fs.ErrExist).
type ExistsError struct {
	Kind string // "branch" or "path"
	Name string
}

func (e *ExistsError) Error() string { return fmt.Sprintf("%s %q already exists", e.Kind, e.Name) }

func (e *ExistsError) Unwrap() error { return fs.ErrExist }

// Info describes one worktree of a repository, as `git worktree list` does.
type Info struct {
	Path     string
	Head     string // commit sha; empty for a bare repository
	Branch   string // short name ("pneuma/run/job"); empty when detached
	Bare     bool
	Detached bool
	Locked   bool
	Prunable bool // its directory is gone; `git worktree prune` will drop it
}

// Root returns the top-level directory of the main worktree of the repository
// that contains dir, with symlinks resolved. From a linked worktree it returns
// the main worktree; when the repository is bare, the top level of dir's own
// worktree. A dir outside any working tree gives a *NotRepoError.
func (m *Manager) Root(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", &NotRepoError{Path: dir, Err: err}
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", &NotRepoError{Path: dir, Err: err}
	} else if !fi.IsDir() {
		return "", &NotRepoError{Path: dir, Err: errors.New("not a directory")}
	}
	out, err := m.output(ctx, "-C", abs, "rev-parse", "--is-inside-work-tree", "--git-dir", "--git-common-dir")
	if err != nil {
		if isNotRepo(err) {
			return "", &NotRepoError{Path: dir, Err: err}
		}
		return "", fmt.Errorf("find repository of %s: %w", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		return "", fmt.Errorf("find repository of %s: unexpected rev-parse output %q", dir, out)
	}
	if lines[0] != "true" {
		return "", &NotRepoError{Path: dir, Err: errors.New("not inside a working tree")}
	}
	gitDir, commonDir := absIn(abs, lines[1]), absIn(abs, lines[2])
	top, err := m.output(ctx, "-C", abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("find repository of %s: %w", dir, err)
	}
	root := strings.TrimSpace(string(top))
	if !samePath(gitDir, commonDir) {
		// A linked worktree: the main worktree is the first entry of the list.
		list, err := m.List(ctx, abs)
		if err != nil {
			return "", fmt.Errorf("find repository of %s: %w", dir, err)
		}
		if len(list) > 0 && !list[0].Bare && isDir(list[0].Path) {
			root = list[0].Path
		}
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return root, nil
}

func isNotRepo(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(ce.Stderr, "not a git repository")
}

// absIn makes a path printed by git, relative to dir, absolute.
func absIn(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// listed reports whether path is one of the linked worktrees in list (git
// worktree list: the main worktree first). Git lists the paths it resolved
// when the worktree was made, so path is compared as it is and resolved
// once first; each listed path is resolved only when neither matched (the
// end of a run removes a tree per job slot: resolving every listed path for
// each was quadratic in the repository's worktrees).
func listed(list []Info, path string) bool {
	if len(list) < 2 {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	for _, in := range list[1:] {
		if in.Path == path || err == nil && in.Path == real {
			return true
		}
	}
	return slices.ContainsFunc(list[1:], func(in Info) bool { return samePath(in.Path, path) })
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// commonDir returns the absolute git common directory of repo: the .git
// directory shared by the main worktree and every linked worktree.
func (m *Manager) commonDir(ctx context.Context, repo string) (string, error) {
	key, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	dir, ok := m.commons[key]
	m.mu.Unlock()
	if ok {
		return dir, nil
	}
	dir, err = m.findCommonDir(ctx, repo)
	if err != nil {
		return "", err
	}
	m.mu.Lock()
	if m.commons == nil {
		m.commons = map[string]string{}
	}
	m.commons[key] = dir
	m.mu.Unlock()
	return dir, nil
}

// findCommonDir asks git for the common git dir of repo (once per repo:
// commonDir keeps the answer, which cannot change while the repo exists).
func (m *Manager) findCommonDir(ctx context.Context, repo string) (string, error) {
	out, err := m.output(ctx, "-C", repo, "rev-parse", "--git-common-dir")
	if err != nil {
		if isNotRepo(err) {
			return "", &NotRepoError{Path: repo, Err: err}
		}
		return "", err
	}
	abs, err := filepath.Abs(repo)
	if err != nil {
		return "", err
	}
	dir := absIn(abs, strings.TrimSpace(string(out)))
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return dir, nil
}

// excludeMu serialises Exclude within the process; between processes the
// worst case is a duplicate line, which git ignores.
var excludeMu sync.Mutex

// Exclude adds pattern (for example "/.pneuma/") as a line of the
// repository's info/exclude file unless that line is already there. It works
// from the main or a linked worktree: the file lives in the common git dir.
// It takes no context; its one git command (rev-parse) is bounded to a minute.
func (m *Manager) Exclude(repo, pattern string) error {
	if strings.TrimSpace(pattern) == "" || strings.ContainsAny(pattern, "\n\r") {
		return fmt.Errorf("exclude %q: pattern must be one non-empty line", pattern)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	common, err := m.commonDir(ctx, repo)
	if err != nil {
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	excludeMu.Lock()
	defer excludeMu.Unlock()
	file := filepath.Join(common, "info", "exclude")
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		if strings.TrimRight(sc.Text(), " \t\r") == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	line := pattern + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("exclude %q: %w", pattern, err)
	}
	return nil
}

// lock takes the per-repository lock for worktree creation and removal,
// waiting at most until ctx is done.
func (m *Manager) lock(ctx context.Context, common string) (unlock func(), err error) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = make(map[string]chan struct{})
	}
	ch, ok := m.locks[common]
	if !ok {
		ch = make(chan struct{}, 1)
		m.locks[common] = ch
	}
	m.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// CreateOptions says where and from what Create makes a worktree.
type CreateOptions struct {
	Repo   string // any directory of the repository
	Path   string // new worktree directory; must not exist or be empty
	Branch string // new branch, checked out in the worktree; must not exist
	Base   string // commit the branch starts at: sha or ref; empty means HEAD of Repo
	// Existing checks out Branch as it is instead: it must exist, and Base
	// is not used (a resumed job whose worktree was removed gets it back,
	// commits and all).
	Existing bool
}

// lockRetries bounds how often Create retries when another git process holds
// a lock in the repository (a user's git, another pneuma): about 6s of
// backoff in all.
const lockRetries = 8

// Create runs `git worktree add -b Branch Path <Base resolved to a sha>`.
// An existing branch or non-empty Path gives an *ExistsError, a Base that
// names no commit a *RefError. Calls for different paths may run
// concurrently: the Manager serialises them per repository and retries on
// lock contention from other processes. If creation fails, the branch it
// made is deleted again (it points at Base, so nothing is lost).
func (m *Manager) Create(ctx context.Context, o CreateOptions) error {
	if err := m.create(ctx, o); err != nil {
		return fmt.Errorf("create worktree %s: %w", o.Path, err)
	}
	return nil
}

func (m *Manager) create(ctx context.Context, o CreateOptions) error {
	if o.Repo == "" || o.Path == "" {
		return errors.New("repository and path are required")
	}
	if err := ValidBranch(o.Branch); err != nil {
		return err
	}
	path, err := filepath.Abs(o.Path)
	if err != nil {
		return err
	}
	base := o.Base
	switch {
	case o.Existing:
		base = "refs/heads/" + o.Branch
	case base == "":
		base = "HEAD"
	}
	sha, err := m.ResolveRef(ctx, o.Repo, base)
	if err != nil {
		return err
	}
	common, err := m.commonDir(ctx, o.Repo)
	if err != nil {
		return err
	}
	unlock, err := m.lock(ctx, common)
	if err != nil {
		return err
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if err := checkFree(path); err != nil {
		return err
	}
	if err := m.addWorktree(ctx, o.Repo, path, o.Branch, sha, o.Existing); err != nil {
		return err
	}
	m.remember(path, sha, o.Branch)
	// Only the bookkeeping (branch, .git/worktrees entry) is serialised;
	// the checkout, which is most of the time on a big tree, runs
	// concurrently in the worktree's own index.
	locked = false
	unlock()
	if _, err := m.output(ctx, "-C", path, "reset", "--hard", "--quiet", sha); err != nil {
		return fmt.Errorf("check out %s: %w", shortSHA(sha), err)
	}
	return nil
}

// checkFree makes sure the worktree's path does not exist or is an empty
// directory. (git checks the branch: it creates it before the worktree's
// directory, and would leave it behind if the directory were in the way.)
func checkFree(path string) error {
	if entries, err := os.ReadDir(path); err == nil && len(entries) > 0 {
		return &ExistsError{Kind: "path", Name: path}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		if isDir(path) {
			return err
		}
		return &ExistsError{Kind: "path", Name: path}
	}
	return nil
}

// addWorktree adds the worktree without checking it out, on a new branch
// at sha or on an existing branch, retrying while another git process holds
// a lock of the repository.
func (m *Manager) addWorktree(ctx context.Context, repo, path, branch, sha string, existing bool) error {
	args := []string{"-C", repo, "worktree", "add", "--quiet", "--no-checkout", "-b", branch, "--", path, sha}
	if existing {
		args = []string{"-C", repo, "worktree", "add", "--quiet", "--no-checkout", "--", path, branch}
	}
	for attempt := 0; ; attempt++ {
		_, err := m.output(ctx, args...)
		if err == nil {
			return nil
		}
		var ce *CommandError
		if errors.As(err, &ce) {
			switch {
			case strings.Contains(ce.Stderr, "a branch named"):
				return &ExistsError{Kind: "branch", Name: branch}
			case strings.Contains(ce.Stderr, "' already exists"):
				return &ExistsError{Kind: "path", Name: path}
			}
		}
		// git removes a half-made worktree itself, but the branch it created
		// before checking out stays. Delete it (only if it still points at
		// the base and no worktree directory survived) so that a retry, or
		// a rerun of the job, can create it again.
		// Best effort: the add's error is the one to report, and a branch
		// left behind only makes the retry fail with ExistsError.
		if !isDir(path) && !existing {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_, _ = m.output(cctx, "-C", repo, "update-ref", "-d", "refs/heads/"+branch, sha)
			cancel()
		}
		if !lockContention(err) || attempt == lockRetries || ctx.Err() != nil {
			return err
		}
		delay := time.Duration(25<<attempt)*time.Millisecond + rand.N(25*time.Millisecond)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
	}
}

// lockContention reports a git failure caused by another process holding a
// lock file (index.lock, a ref's .lock, packed-refs.lock, config.lock).
func lockContention(err error) bool {
	var ce *CommandError
	if !errors.As(err, &ce) {
		return false
	}
	s := ce.Stderr
	return strings.Contains(s, ".lock': File exists") ||
		strings.Contains(s, "Unable to create") && strings.Contains(s, ".lock") ||
		strings.Contains(s, "cannot lock ref") && !strings.Contains(s, "reference already exists") ||
		strings.Contains(s, "could not lock config file")
}

// Remove deletes the linked worktree at path from repo and prunes stale
// worktree records. It keeps the worktree's branch. A worktree with
// uncommitted changes or untracked files is left alone and gives a
// *DirtyError; files ignored by .gitignore are deleted with the worktree, as
// `git worktree remove` does. A path that no longer exists is only pruned.
func (m *Manager) Remove(ctx context.Context, repo, path string) error {
	if err := m.remove(ctx, repo, path); err != nil {
		return fmt.Errorf("remove worktree %s: %w", path, err)
	}
	return nil
}

func (m *Manager) remove(ctx context.Context, repo, path string) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	common, err := m.commonDir(ctx, repo)
	if err != nil {
		return err
	}
	if isDir(path) {
		if fi, err := os.Lstat(filepath.Join(path, ".git")); err == nil && fi.IsDir() {
			// A repository of its own (the main worktree, or what an agent
			// put in a linked one's place): git refuses it and says why; a
			// status would run git with that repository's settings.
			return m.notLinked(ctx, repo, path)
		}
		files, err := m.Status(ctx, path)
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return &DirtyError{Path: path, Files: files}
		}
	} else if _, err := os.Lstat(path); err == nil {
		return errors.New("not a directory")
	}
	// The worktree is clean: move it out of the way (one rename), let git
	// forget it (prune, under the repository's lock, which Create also
	// takes), and delete the files outside the lock. Deleting a big tree
	// takes seconds; holding the lock for it would stall every Create.
	var trash string
	if isDir(path) {
		// Only ever a linked worktree of repo: never its main checkout, never
		// any other directory.
		list, err := m.List(ctx, repo)
		if err != nil {
			return err
		}
		if !listed(list, path) {
			return m.notLinked(ctx, repo, path)
		}
		trash = fmt.Sprintf("%s.removing-%d", path, time.Now().UnixNano())
		if err := os.Rename(path, trash); err != nil {
			// Fall back to git's own removal, which re-checks cleanliness
			// (without --force it refuses a worktree that became dirty).
			_, err := m.output(ctx, "-C", repo, "worktree", "remove", "--", path)
			if err != nil {
				return err
			}
			trash = ""
		}
	}
	unlock, err := m.lock(ctx, common)
	if err != nil {
		return err
	}
	_, err = m.output(ctx, "-C", repo, "worktree", "prune")
	unlock()
	if err != nil {
		return err
	}
	m.forget(path)
	if trash != "" {
		if err := os.RemoveAll(trash); err != nil {
			return fmt.Errorf("delete the removed worktree's files: %w", err)
		}
	}
	return nil
}

// notLinked is Remove's answer for a path that is no linked worktree of
// repo: git's own refusal, which says what the path is.
func (m *Manager) notLinked(ctx context.Context, repo, path string) error {
	_, err := m.output(ctx, "-C", repo, "worktree", "remove", "--", path)
	if err == nil {
		err = fmt.Errorf("%s is not a linked worktree of %s", path, repo)
	}
	return err
}

// List returns the worktrees of repo, the main worktree first, as
// `git worktree list --porcelain` reports them.
func (m *Manager) List(ctx context.Context, repo string) ([]Info, error) {
	out, err := m.output(ctx, "-C", repo, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, fmt.Errorf("list worktrees: %w", err)
	}
	return parseList(out), nil
}

// parseList parses `git worktree list --porcelain`: records of
// "key value" lines separated by blank lines.
func parseList(out []byte) []Info {
	var list []Info
	var cur *Info
	for _, line := range strings.Split(string(out), "\n") {
		key, value, _ := strings.Cut(line, " ")
		switch key {
		case "":
			cur = nil
			continue
		case "worktree":
			list = append(list, Info{Path: value})
			cur = &list[len(list)-1]
			continue
		}
		if cur == nil {
			continue
		}
		switch key {
		case "HEAD":
			cur.Head = value
		case "branch":
			cur.Branch = strings.TrimPrefix(value, "refs/heads/")
		case "bare":
			cur.Bare = true
		case "detached":
			cur.Detached = true
		case "locked":
			cur.Locked = true
		case "prunable":
			cur.Prunable = true
		}
	}
	return list
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
