package worktree

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// errNoCommit is the RefError cause when git finds nothing by that name.
var errNoCommit = errors.New("no such commit")

// ResolveRef returns the full sha of the commit that ref names in repo (any
// directory of it, linked worktrees included). ref is anything
// `git rev-parse` accepts: HEAD, a branch, a tag (peeled to its commit), a
// full or unambiguous short sha, with ~N and ^N suffixes. go-git answers the
// common forms without a subprocess; everything else (ambiguous short shas,
// @{upstream}, :/text, repositories go-git cannot read) is left to
// `git rev-parse --verify <ref>^{commit}`. A ref that names no commit gives
// a *RefError.
func (m *Manager) ResolveRef(ctx context.Context, repo, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") || strings.ContainsAny(ref, "\x00\n") {
		return "", &RefError{Repo: repo, Ref: ref, Err: errors.New("not a valid revision")}
	}
	if sha, ok := m.resolveGoGit(repo, ref); ok {
		return sha, nil
	}
	spec := ref + "^{commit}"
	if strings.HasPrefix(ref, ":/") {
		spec = ref // a commit message search: a suffix would become part of the pattern
	}
	out, err := m.output(ctx, "-C", repo, "rev-parse", "--verify", spec)
	if err != nil {
		var ce *CommandError
		switch {
		case isNotRepo(err):
			return "", &NotRepoError{Path: repo, Err: err}
		case ctx.Err() != nil || !errors.As(err, &ce):
			return "", err
		case strings.HasSuffix(ce.Stderr, "Needed a single revision") && !strings.Contains(ce.Stderr, "ambiguous"):
			return "", &RefError{Repo: repo, Ref: ref, Err: errNoCommit}
		}
		return "", &RefError{Repo: repo, Ref: ref, Err: err}
	}
	return strings.TrimSpace(string(out)), nil
}

// Head returns the sha of the commit checked out in dir's worktree; an
// unborn branch gives a *RefError, and a worktree whose git links changed
// a *TamperedError (what they name now is not the job's branch).
func (m *Manager) Head(ctx context.Context, dir string) (string, error) {
	if _, err := m.checkLinks(dir); err != nil {
		return "", err
	}
	return m.ResolveRef(ctx, dir, "HEAD")
}

// resolveGoGit resolves the forms of ref that go-git reads exactly like git
// does. ok is false whenever git must decide.
func (m *Manager) resolveGoGit(dir, ref string) (sha string, ok bool) {
	name, steps, ok := splitRevision(ref)
	if !ok {
		return "", false
	}
	if len(steps) == 0 && fullSHA(name) {
		// A commit already peeled in this store needs no repository opened.
		key := commitKey{store: objectStore(dir), sha: plumbing.NewHash(name)}
		if _, known := m.commits.Load(key); known && key.store != "" {
			return key.sha.String(), true
		}
	}
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return "", false
	}
	h, ok := resolveName(r, name)
	if !ok {
		return "", false
	}
	key := commitKey{store: objectStore(dir), sha: h}
	if len(steps) == 0 && key.store != "" {
		if _, known := m.commits.Load(key); known {
			return h.String(), true
		}
	}
	c, ok := peelCommit(r, h)
	if !ok {
		return "", false
	}
	if c.Hash == h && key.store != "" {
		m.commits.Store(key, struct{}{})
	}
	for _, s := range steps {
		for range s.times {
			if s.parent < 1 || s.parent > c.NumParents() {
				return "", false
			}
			p, err := c.Parent(s.parent - 1)
			if err != nil {
				return "", false
			}
			c = p
		}
	}
	return c.Hash.String(), true
}

// commitKey names a commit object in one object store.
type commitKey struct {
	store string // the common git dir
	sha   plumbing.Hash
}

// objectStore returns the common git dir of the worktree whose top
// directory is dir, read from its .git (a directory, or a file naming the
// git dir, whose commondir file names the common one), or "" when dir is not
// the top of a worktree.
func objectStore(dir string) string {
	gd, err := gitDir(dir)
	if err != nil {
		return ""
	}
	return commonGitDir(gd)
}

// commonGitDir returns the common git dir of git dir gd (itself, unless its
// commondir file names another), or "" if it cannot be made absolute.
func commonGitDir(gd string) string {
	common := gd
	if data, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gd, common)
		}
	}
	abs, err := filepath.Abs(common)
	if err != nil {
		return ""
	}
	return abs
}

// gitDir returns the git directory of the worktree at dir: what its .git
// file points to for a linked worktree, or .git itself.
func gitDir(dir string) (string, error) {
	p := filepath.Join(dir, ".git")
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	data, err := readSmall(p, maxLink)
	if err != nil {
		return "", err
	}
	gd, found := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !found || gd == "" {
		return "", errors.New("not a gitdir file: " + p)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	return gd, nil
}

// step is one ~N (times N, first parent) or ^N (once, parent N; ^0 is none).
type step struct{ parent, times int }

// splitRevision splits "name~2^2" into "name" and its parent steps; ok is
// false for syntax left to git (@{...}, ^{...}, :path, ranges).
func splitRevision(ref string) (name string, steps []step, ok bool) {
	if strings.ContainsAny(ref, "@:{} ") || strings.Contains(ref, "..") {
		return "", nil, false
	}
	i := strings.IndexAny(ref, "~^")
	if i <= 0 {
		return ref, nil, i < 0
	}
	name, rest := ref[:i], ref[i:]
	for rest != "" {
		op := rest[0]
		rest = rest[1:]
		j := 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		n := 1
		if j > 0 {
			v, err := strconv.Atoi(rest[:j])
			if err != nil || v > 1<<16 {
				return "", nil, false
			}
			n = v
		}
		rest = rest[j:]
		switch op {
		case '~':
			steps = append(steps, step{parent: 1, times: n})
		case '^':
			if n > 0 {
				steps = append(steps, step{parent: n, times: 1})
			}
		default:
			return "", nil, false
		}
	}
	return name, steps, true
}

// resolveName follows git's rules for a revision name: a full sha, then
// the refs HEAD and refs/..., refs/tags/, refs/heads/,
// refs/remotes/ and refs/remotes/<name>/HEAD (git's order), then a unique
// short sha.
func resolveName(r *git.Repository, name string) (plumbing.Hash, bool) {
	if fullSHA(name) {
		return plumbing.NewHash(name), true
	}
	if isPseudoRef(name) && name != "HEAD" {
		return plumbing.ZeroHash, false // FETCH_HEAD and friends have their own format
	}
	if checkRef(name, true) == nil {
		var rules []string
		if name == "HEAD" || strings.HasPrefix(name, "refs/") {
			rules = append(rules, "%s")
		}
		rules = append(rules, "refs/%s", "refs/tags/%s", "refs/heads/%s", "refs/remotes/%s", "refs/remotes/%s/HEAD")
		for _, rule := range rules {
			ref, err := r.Reference(plumbing.ReferenceName(strings.Replace(rule, "%s", name, 1)), true)
			if err == nil {
				return ref.Hash(), true
			}
			if !errors.Is(err, plumbing.ErrReferenceNotFound) {
				return plumbing.ZeroHash, false
			}
		}
	}
	if len(name) >= 4 && len(name) < 40 && isHex(name) {
		return shortHash(r, strings.ToLower(name))
	}
	return plumbing.ZeroHash, false
}

// shortHash finds the one object whose sha starts with prefix.
func shortHash(r *git.Repository, prefix string) (plumbing.Hash, bool) {
	type prefixer interface {
		HashesWithPrefix(prefix []byte) ([]plumbing.Hash, error)
	}
	st, ok := r.Storer.(prefixer)
	if !ok {
		return plumbing.ZeroHash, false
	}
	b, err := hex.DecodeString(prefix[:len(prefix)&^1])
	if err != nil {
		return plumbing.ZeroHash, false
	}
	hashes, err := st.HashesWithPrefix(b)
	if err != nil {
		return plumbing.ZeroHash, false
	}
	var found []plumbing.Hash
	for _, h := range hashes {
		if strings.HasPrefix(h.String(), prefix) {
			found = append(found, h)
		}
	}
	if len(found) != 1 {
		return plumbing.ZeroHash, false // git explains the ambiguity
	}
	return found[0], true
}

// peelCommit returns the commit h names, through one annotated tag.
func peelCommit(r *git.Repository, h plumbing.Hash) (*object.Commit, bool) {
	if c, err := r.CommitObject(h); err == nil {
		return c, true
	}
	t, err := r.TagObject(h)
	if err != nil {
		return nil, false
	}
	c, err := t.Commit()
	return c, err == nil
}

// fullSHA says whether s is a full sha-1 in hex.
func fullSHA(s string) bool { return len(s) == 40 && isHex(s) }

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return s != ""
}

// isPseudoRef reports names like FETCH_HEAD and ORIG_HEAD that git looks up
// at the top of the git dir.
func isPseudoRef(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || c == '_') {
			return false
		}
	}
	return strings.HasSuffix(s, "HEAD")
}
