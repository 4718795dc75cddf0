package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ownRef carries a job's branch between the shared repository and the
// sandbox. Inside, the directory of the branch's ref (and of its reflog)
// is a private directory of the job's that shows only the job's own ref:
// the repository's other loose refs there (for pneuma's branches, the
// run's other jobs) are not shown, and a ref created inside, whether a
// new name, another job's or a loose ref over one that is only in
// packed-refs, never reaches the shared repository. Only the job's own ref
// goes out, through sync. (One bind per directory, not one per ref there:
// bubblewrap's cost grows with the square of its mounts, and a run of 300
// jobs has 300 refs in that directory.)
type ownRef struct {
	mu sync.Mutex
	// common is the repository's git dir, ref the job's branch
	// (refs/heads/...), refDir and logDir the directories inside of its
	// ref and reflog, priv and privLog the private directories bound there.
	common, ref, refDir, logDir, priv, privLog string
	// last is the value sync last put inside ("" none).
	last string
}

// newOwnRef prepares the private directories for the branch ref of the
// linked worktree whose repository is common, under state; nil when the
// branch is straight under refs/heads (its directory stays read-only).
func newOwnRef(common, ref, state string) *ownRef {
	rel := strings.TrimPrefix(ref, "refs/")
	refDir := filepath.Dir(filepath.Join(common, "refs", rel))
	if !strings.HasPrefix(refDir, filepath.Join(common, "refs", "heads")+string(filepath.Separator)) {
		return nil
	}
	return &ownRef{common: common, ref: ref, refDir: refDir, logDir: filepath.Dir(filepath.Join(common, "logs", "refs", rel)),
		priv: filepath.Join(state, "refs"), privLog: filepath.Join(state, "logs")}
}

// binds are bubblewrap's arguments for the ref: each private directory
// over its directory.
func (o *ownRef) binds() []string {
	var a argv
	for _, d := range [][2]string{{o.priv, o.refDir}, {o.privLog, o.logDir}} {
		if err := os.MkdirAll(d[0], 0o700); err != nil {
			continue // without it the directory stays read-only inside: no commit, no escape
		}
		a.add("--bind", d[0], d[1])
	}
	return a
}

// inside reads the ref's value inside (ok false: none). Read it before
// the objects git wrote inside are moved (see Box.SyncRefs): git writes a
// commit's objects before the ref, so the value read then names objects
// the move carries out.
func (o *ownRef) inside() (value string, ok bool) {
	return readRef(filepath.Join(o.priv, filepath.Base(o.ref)))
}

// sync carries the job's ref out, when a commit inside moved it to inside
// (read by o.inside before the objects moved) since the last sync (with
// pneuma's git, hooks off, and only from the value it had then), and then
// the repository's value in.
func (o *ownRef) sync(inside string, ok bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	own := filepath.Join(o.priv, filepath.Base(o.ref))
	var err error
	if ok {
		switch {
		case inside == o.last:
		case !objectID(inside):
			err = fmt.Errorf("sandbox: %s inside is %.64q, not an object id: not carried out", o.ref, inside)
		default:
			if _, gerr := o.git("update-ref", "-m", "pneuma: commit in the job's sandbox", o.ref, inside, o.last); gerr != nil {
				err = fmt.Errorf("sandbox: carry %s out (%s): %w", o.ref, inside, gerr)
			}
		}
	}
	real := o.outside()
	o.last = real
	// Written only when the repository's value is not the one read inside
	// above (pneuma committed outside, or the value inside was not carried
	// out): read again, a commit a git inside made since would be undone.
	if (ok && inside == real) || (!ok && real == "") {
		return err
	}
	if real == "" {
		_ = os.Remove(own) // gone outside: gone inside
		return err
	}
	if werr := os.MkdirAll(o.priv, 0o700); werr != nil {
		return fmt.Errorf("sandbox: carry %s in: %w", o.ref, werr)
	}
	if werr := replaceFile(own, real+"\n"); werr != nil {
		return fmt.Errorf("sandbox: carry %s in: %w", o.ref, werr)
	}
	return err
}

// outside is the ref's value in the repository ("" unborn). go-git reads
// it from git's own ref storage (a loose ref file or packed-refs; only
// pneuma's git writes there: the directory is read-only inside), which
// spares a git process on every launch and every sync; what go-git cannot
// read (a symbolic or reftable ref) is asked of git.
func (o *ownRef) outside() string {
	st := filesystem.NewStorage(osfs.New(o.common), cache.NewObjectLRU(0))
	if r, err := st.Reference(plumbing.ReferenceName(o.ref)); err == nil && r.Type() == plumbing.HashReference {
		return r.Hash().String()
	}
	real, _ := o.git("rev-parse", "--verify", "-q", o.ref) // unborn: none inside either
	return real
}

// objectID reports whether s is a hexadecimal object id (SHA-1 or SHA-256).
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// readRef reads the ref file the sandbox wrote: a regular file (never a
// link the agent planted), its first line.
func readRef(path string) (string, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), true
}

// replaceFile writes content to path through a new file beside it, so
// that nothing the agent planted there is followed.
func replaceFile(path, content string) error {
	tmp := path + ".pneuma-tmp"
	_ = os.Remove(tmp) // whatever is there: O_EXCL below refuses it anyway
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// git runs pneuma's own git on the repository, never the agent's hooks.
func (o *ownRef) git(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", o.common, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor="}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
