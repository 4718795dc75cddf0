package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The writes a reused worktree needs (move the directory, create its branch,
// point HEAD at it) are a few small files when the repository keeps its refs
// as files, and a git process each otherwise: on a run of short jobs those
// processes were most of pneuma's own CPU. fileRefs makes them the way git's
// files backend does: a lock file created exclusively, the new value written
// to it, renamed over the old; a reflog line appended where git would write
// one. Each operation either does all it says or changes nothing and
// returns errNotPlain, and then the caller asks git, which handles every case
// this does not (reftable, packed-ref conflicts, locked or relative-path
// worktrees, submodules, a lock held by another process).

// errNotPlain says a fast path could not be sure it would do what git does;
// nothing was changed.
var errNotPlain = errors.New("left to git")

// fileRefs writes refs and worktree records in one repository's common git
// dir.
type fileRefs struct {
	common string
	// ident is the committer of reflog lines, "Name <email>", as git would
	// write it (git var, non-strict: git's reflogs never fail on identity).
	ident string
	// logAll is core.logAllRefUpdates: a branch gets a reflog when created.
	logAll bool

	mu    sync.Mutex
	stamp time.Time         // the records directory's time when links was read
	links map[string]string // worktree record → the .git it names; nil: unknown
}

// fileRefs returns the writer for the repository at dir (any worktree of
// it), or nil when its refs are not plain files in the common dir or git
// would do more than write them: a reftable or another ref storage,
// GIT_COMMITTER_DATE set, no identity, a shared repository, symlink refs,
// relative worktree links, per-worktree settings, core.fsync, a
// reference-transaction hook, a setting it cannot read. The answer is kept
// per common git dir for the Manager's life (one `git var -l` per run): a
// hook or setting added during a run is seen by the next one.
func (m *Manager) fileRefs(ctx context.Context, dir string) *fileRefs {
	common, err := m.commonDir(ctx, dir)
	if err != nil {
		return nil
	}
	if v, ok := m.refWriters.Load(common); ok {
		return v.(*fileRefs)
	}
	fr := m.newFileRefs(ctx, common)
	if ctx.Err() != nil {
		return fr // a cancelled probe is not an answer to keep
	}
	v, _ := m.refWriters.LoadOrStore(common, fr)
	return v.(*fileRefs)
}

func (m *Manager) newFileRefs(ctx context.Context, common string) *fileRefs {
	if isReftable(common) || m.envSet("GIT_COMMITTER_DATE") || m.envSet("GIT_REFERENCE_BACKEND") {
		return nil
	}
	out, err := m.output(ctx, "--git-dir="+common, "var", "-l")
	if err != nil {
		return nil
	}
	fr := &fileRefs{common: common, logAll: true}
	hooks := filepath.Join(common, "hooks")
	for line := range strings.Lines(string(out)) {
		key, value, found := strings.Cut(strings.TrimRight(line, "\n"), "=")
		if !found {
			value = "true" // a key without a value is a true boolean
		}
		switch key {
		case "GIT_COMMITTER_IDENT":
			fr.ident = identWithoutDate(value)
		case "core.logallrefupdates":
			on, ok := gitBool(value)
			if value == "always" {
				on, ok = true, true
			}
			if !ok {
				return nil
			}
			fr.logAll = on
		case "core.sharedrepository", "core.prefersymlinkrefs", "worktree.userelativepaths", "extensions.worktreeconfig":
			// Group permissions on every file, HEAD as a symlink, relative
			// worktree links, settings per worktree.
			if on, ok := gitBool(value); on || !ok {
				return nil
			}
		case "core.fsync", "core.fsyncmethod":
			return nil // refs may have to reach the disk
		case "extensions.refstorage":
			if value != "files" {
				return nil // a reftable, or refs kept somewhere else (git 2.54)
			}
		case "core.hookspath":
			hooks = value
		}
		if strings.HasPrefix(key, "hook.") && strings.HasSuffix(key, ".event") && value == "reference-transaction" {
			return nil // a hook configured by name (git 2.54)
		}
	}
	// git runs a reference-transaction hook on every ref it writes.
	if !filepath.IsAbs(hooks) || exists(filepath.Join(hooks, "reference-transaction")) {
		return nil
	}
	if fr.ident == "" {
		return nil
	}
	return fr
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// envSet says whether git would see the variable set.
func (m *Manager) envSet(key string) bool {
	for _, kv := range m.Env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	_, set := os.LookupEnv(key)
	return set
}

// identWithoutDate cuts the timestamp and zone off git's "Name <email> 1700000000 +0100".
func identWithoutDate(s string) string {
	i := strings.LastIndexByte(s, '>')
	if i < 0 {
		return ""
	}
	return s[:i+1]
}

// gitBool parses a git boolean setting.
func gitBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0", "":
		return false, true
	}
	return false, false
}

// createBranch creates refs/heads/<branch> at sha, refusing (*ExistsError) a
// branch that exists, with the reflog line git's update-ref -m msg writes.
func (fr *fileRefs) createBranch(branch, sha, msg string) error {
	ref := "refs/heads/" + branch
	if checkRef(ref, false) != nil || !fullSHA(sha) {
		return errNotPlain
	}
	file := filepath.Join(fr.common, filepath.FromSlash(ref))
	if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
		return errNotPlain // a ref where a directory should be: git says which
	}
	return writeLocked(file, sha+"\n", func() error {
		// Under the ref's lock, as git: a concurrent pack-refs cannot move
		// the branch from its file to packed-refs in between.
		if fi, err := os.Lstat(file); err == nil && fi.Mode().IsRegular() {
			return &ExistsError{Kind: "branch", Name: branch}
		} else if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return errNotPlain // a directory of refs, or unreadable: git decides
		}
		if err := fr.packedConflict(ref); err != nil {
			return err
		}
		return fr.appendLog(filepath.Join(fr.common, "logs", filepath.FromSlash(ref)), zeroSHA, sha, msg)
	})
}

// packedConflict looks for ref, or a ref that is a directory of it or has
// it as a directory, in packed-refs: the first is an *ExistsError, the others
// are git's to report.
func (fr *fileRefs) packedConflict(ref string) error {
	packed, err := os.ReadFile(filepath.Join(fr.common, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errNotPlain
	}
	for name := range packedNames(packed) {
		switch {
		case name == ref:
			return &ExistsError{Kind: "branch", Name: strings.TrimPrefix(ref, "refs/heads/")}
		case strings.HasPrefix(name, ref+"/"), strings.HasPrefix(ref, name+"/"):
			return errNotPlain
		}
	}
	return nil
}

// setHEAD writes the HEAD of the linked worktree whose git dir is admin:
// "ref: refs/heads/x" or a sha, with the reflog line git writes for it (old
// and new are the commits HEAD was and is at; msg may be empty, as for
// `git symbolic-ref` without -m).
func (fr *fileRefs) setHEAD(admin, value, old, new, msg string) error {
	file := filepath.Join(admin, "HEAD")
	return writeLocked(file, value+"\n", func() error {
		return fr.appendLog(filepath.Join(admin, "logs", "HEAD"), old, new, msg)
	})
}

// appendLog appends one reflog line to file, which it creates (and its
// directories) when core.logAllRefUpdates asks for reflogs; else only an
// existing reflog gets the line, as with git.
func (fr *fileRefs) appendLog(file, old, new, msg string) error {
	flags := os.O_WRONLY | os.O_APPEND
	if fr.logAll {
		flags |= os.O_CREATE
		if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
			return errNotPlain
		}
	}
	f, err := os.OpenFile(file, flags, 0o666)
	if errors.Is(err, fs.ErrNotExist) && !fr.logAll {
		return nil
	}
	if err != nil {
		return errNotPlain
	}
	now := time.Now()
	line := fmt.Sprintf("%s %s %s %d %s", old, new, fr.ident, now.Unix(), now.Format("-0700"))
	if msg != "" {
		line += "\t" + msg
	}
	line += "\n"
	_, werr := f.WriteString(line)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("write reflog %s: %w", file, err)
	}
	return nil
}

const zeroSHA = "0000000000000000000000000000000000000000"

// writeLocked replaces file with content the way git does: content goes to
// file.lock, created exclusively (a lock someone holds is errNotPlain: git
// then waits or reports it), check runs while the lock is held (its error
// leaves file as it was), and the lock is renamed over file.
func writeLocked(file, content string, check func() error) (err error) {
	lock := file + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666) // the umask decides, as for git
	if err != nil {
		return errNotPlain
	}
	defer func() {
		if err != nil {
			_ = os.Remove(lock) // ours: nothing else may have made it
		}
	}()
	_, werr := f.WriteString(content)
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", lock, err)
	}
	if err := check(); err != nil {
		return err
	}
	if err := os.Rename(lock, file); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// moveLinked moves the linked worktree at from to to and updates its record
// in the common git dir, as `git worktree move` does, when the worktree's
// links are absolute paths (every git before 2.48, and later ones unless
// told otherwise), it is not locked and has no submodules of its own. It
// returns the worktree's git dir.
func (fr *fileRefs) moveLinked(from, to string) (admin string, err error) {
	admin, err = fr.adminDir(from)
	if err != nil {
		return "", err
	}
	// Both links absolute: the worktree's .git file, and the record's gitdir.
	dotGit, err := os.ReadFile(filepath.Join(from, ".git"))
	if err != nil || !strings.HasPrefix(string(dotGit), "gitdir: /") {
		return "", errNotPlain
	}
	link, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil || !sameLink(strings.TrimSpace(string(link)), filepath.Join(from, ".git")) {
		return "", errNotPlain
	}
	for _, name := range []string{"locked", "modules"} {
		if _, err := os.Lstat(filepath.Join(admin, name)); !errors.Is(err, fs.ErrNotExist) {
			return "", errNotPlain
		}
	}
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		return "", &ExistsError{Kind: "path", Name: to}
	}
	if fr.registered(to) {
		return "", errNotPlain // a stale record of another worktree names it: git refuses
	}
	if err := os.Rename(from, to); err != nil {
		return "", errNotPlain
	}
	real, err := filepath.EvalSymlinks(to)
	record := filepath.Join(real, ".git")
	if err == nil {
		// In place, as git's update_worktree_location writes it.
		err = os.WriteFile(filepath.Join(admin, "gitdir"), []byte(record+"\n"), 0o666)
	}
	if err != nil {
		if os.Rename(to, from) == nil {
			return "", errNotPlain
		}
		return "", fmt.Errorf("move %s to %s: %w", from, to, err)
	}
	fr.moved(filepath.Base(admin), record)
	return admin, nil
}

// registered says whether a worktree record names dir (missing, since it
// does not exist): git refuses to move a worktree there, and two records of
// one path make the next prune drop one of them, perhaps the live one.
// Reading a record costs ~10 µs, so what each names is kept: the records
// are listed again when their directory changes (one added or removed) and
// only new ones are read; a move made here updates them, one made by git
// drops them all (forget).
func (fr *fileRefs) registered(dir string) bool {
	records := filepath.Join(fr.common, "worktrees")
	fi, err := os.Stat(records)
	if err != nil {
		return true // unsure
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.links == nil || !fi.ModTime().Equal(fr.stamp) {
		if err := fr.readRecords(records, fi.ModTime()); err != nil {
			return true
		}
	}
	want := filepath.Join(dir, ".git")
	real := want
	if r, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		real = filepath.Join(r, filepath.Base(dir), ".git")
	}
	for _, link := range fr.links {
		if link == want || link == real {
			return true
		}
	}
	return false
}

// readRecords reads what each worktree record names: the records it has
// not seen yet (git writes a record's gitdir when it adds or moves it, and
// moves are noted or forgotten); the caller holds mu.
func (fr *fileRefs) readRecords(records string, mtime time.Time) error {
	entries, err := os.ReadDir(records)
	if err != nil {
		return err
	}
	links := make(map[string]string, len(entries))
	for _, e := range entries {
		if link, ok := fr.links[e.Name()]; ok {
			links[e.Name()] = link
			continue
		}
		link, err := os.ReadFile(filepath.Join(records, e.Name(), "gitdir"))
		if err != nil {
			continue // not a worktree record (or half made): git's prune decides
		}
		links[e.Name()] = filepath.Clean(strings.TrimSpace(string(link)))
	}
	fr.links = links
	fr.stamp = mtime
	if time.Since(mtime) < time.Second {
		// A record added within the same clock tick would leave the
		// directory's time as it is: read again next time.
		fr.stamp = time.Time{}
	}
	return nil
}

// moved notes that record id now names link.
func (fr *fileRefs) moved(id, link string) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.links != nil {
		fr.links[id] = link
	}
}

// forget drops what registered knows, after git moved a worktree.
func (fr *fileRefs) forget() {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.links = nil
}

// adminDir returns the git dir of the linked worktree at dir, which must be
// one of this repository's.
func (fr *fileRefs) adminDir(dir string) (string, error) {
	admin, err := gitDir(dir)
	if err != nil || !filepath.IsAbs(admin) || filepath.Dir(admin) != filepath.Join(fr.common, "worktrees") {
		return "", errNotPlain
	}
	return admin, nil
}

// sameLink says whether a worktree record's gitdir (absolute, as git wrote
// it: the real path) names the .git file at p.
func sameLink(link, p string) bool {
	if !filepath.IsAbs(link) {
		return false
	}
	if link == p {
		return true
	}
	real, err := filepath.EvalSymlinks(p)
	return err == nil && real == link
}
