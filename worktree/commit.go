package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Status returns the paths with changes in dir's worktree: staged,
// unstaged and untracked (every file, not just its directory), as
// `git status --porcelain=v1 -z --untracked-files=all` lists them; renames
// give the new path. Ignored files are not listed. Empty means clean.
//
// It sets GIT_OPTIONAL_LOCKS=0: a plain status refreshes the index under
// index.lock, which would collide with a git run by the agent in the same
// worktree.
func (m *Manager) Status(ctx context.Context, dir string) ([]string, error) {
	if _, err := m.checkLinks(dir); err != nil {
		return nil, fmt.Errorf("status of %s: %w", dir, err)
	}
	out, err := m.exec(ctx, run{
		args: []string{"-C", dir, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignore-submodules=none"},
		env:  []string{"GIT_OPTIONAL_LOCKS=0"},
	})
	if err != nil {
		if isNotRepo(err) {
			return nil, &NotRepoError{Path: dir, Err: err}
		}
		return nil, fmt.Errorf("status of %s: %w", dir, err)
	}
	return parseStatus(out), nil
}

// parseStatus parses `git status --porcelain=v1 -z`: "XY path\0", and for
// renames and copies "XY new\0old\0".
func parseStatus(out []byte) []string {
	files := []string{}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		files = append(files, string(f[3:]))
		if x, y := f[0], f[1]; x == 'R' || x == 'C' || y == 'R' || y == 'C' {
			i++ // the original path
		}
	}
	return files
}

// Fallback identity for CommitAll when git has none.
const (
	fallbackName  = "pneuma"
	fallbackEmail = "pneuma@localhost"
)

// CommitAll stages everything in dir's worktree (`git add -A`, which
// respects .gitignore) and commits it with message on branch, the branch
// the worktree was made on: a HEAD that names any other branch, or none,
// is refused (*TamperedError) before git runs, since `git commit` moves
// whatever HEAD names and an agent may have rewritten it (branch "" skips
// that check, for a caller that commits on whatever is checked out). When
// nothing is staged afterwards it commits nothing and returns the current
// HEAD with committed false (sha is empty on an unborn branch).
//
// The commit is a snapshot of what a job left behind, so it must not fail or
// hang on the user's machinery:
//   - hooks do not run (--no-verify, and core.hooksPath=/dev/null as for
//     every command pneuma runs, because --no-verify alone still runs
//     prepare-commit-msg and post-commit): a linter or test hook could reject
//     the snapshot, rewrite it, or wait for input, and the agent may have
//     written one; the user's hooks still run when they land the branch;
//   - commits are not signed (commit.gpgSign=false): a signing prompt
//     would block an unattended run;
//   - without a configured identity it commits as pneuma <pneuma@localhost>,
//     filling in only the missing user.name or user.email.
func (m *Manager) CommitAll(ctx context.Context, dir, branch, message string) (sha string, committed bool, err error) {
	sha, committed, err = m.commitAll(ctx, dir, branch, message)
	if err != nil {
		return "", false, fmt.Errorf("commit changes in %s: %w", dir, err)
	}
	return sha, committed, nil
}

func (m *Manager) commitAll(ctx context.Context, dir, branch, message string) (string, bool, error) {
	if strings.TrimSpace(message) == "" {
		return "", false, errors.New("empty commit message")
	}
	if _, err := m.checkLinks(dir); err != nil {
		return "", false, err
	}
	if branch != "" {
		// checkLinks checks HEAD of a worktree this Manager made; this one
		// may not be (a session resumed by a later process).
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", false, err
		}
		admin, err := gitDir(abs)
		if err != nil {
			return "", false, &TamperedError{Path: abs, Reason: fmt.Sprintf("find its git dir: %v", err)}
		}
		if err := checkHead(abs, admin, branch); err != nil {
			return "", false, err
		}
	}
	if _, err := m.output(ctx, "-C", dir, "add", "-A"); err != nil {
		return "", false, err
	}
	_, err := m.output(ctx, "-C", dir, "diff", "--cached", "--quiet", "--no-ext-diff")
	var ce *CommandError
	switch {
	case err == nil:
		head, err := m.Head(ctx, dir)
		var re *RefError
		if errors.As(err, &re) {
			return "", false, nil
		}
		return head, false, err
	case !errors.As(err, &ce) || ce.ExitCode() != 1:
		return "", false, err
	}
	commit := func(identity []string) error {
		args := append([]string{"-C", dir}, identity...)
		args = append(args,
			"-c", "commit.gpgSign=false",
			"commit", "--no-verify", "--quiet", "-m", message)
		_, err := m.output(ctx, args...)
		return err
	}
	// Most machines have an identity: try without the fallback first and
	// look the identity up only when git says it has none.
	if err := commit(nil); err != nil {
		if !errors.As(err, &ce) || !noIdentity(ce.Stderr) {
			return "", false, err
		}
		if err := commit(m.identity(ctx, dir)); err != nil {
			return "", false, err
		}
	}
	head, err := m.Head(ctx, dir)
	if err != nil {
		return "", false, err
	}
	return head, true, nil
}

// identity returns -c options for the parts of the committer identity git
// cannot determine itself (from config, GIT_AUTHOR_*/GIT_COMMITTER_* or
// EMAIL), so that a configured identity is always used.
func (m *Manager) identity(ctx context.Context, dir string) []string {
	_, errA := m.output(ctx, "-C", dir, "var", "GIT_AUTHOR_IDENT")
	_, errC := m.output(ctx, "-C", dir, "var", "GIT_COMMITTER_IDENT")
	if errA == nil && errC == nil {
		return nil
	}
	var args []string
	if out, err := m.output(ctx, "-C", dir, "config", "--get", "user.name"); err != nil || strings.TrimSpace(string(out)) == "" {
		args = append(args, "-c", "user.name="+fallbackName)
	}
	if out, err := m.output(ctx, "-C", dir, "config", "--get", "user.email"); err != nil || strings.TrimSpace(string(out)) == "" {
		args = append(args, "-c", "user.email="+fallbackEmail)
	}
	return args
}

// noIdentity reports whether git refused to commit for want of a user name
// or email.
func noIdentity(stderr string) bool {
	for _, s := range []string{"tell me who you are", "unable to auto-detect email", "empty ident name", "no email was given"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// Stat counts the changes between two commits.
type Stat struct {
	Files      int // changed files, binary ones included
	Insertions int // added lines
	Deletions  int // removed lines
}

// diffArgs are the options both diff forms share: rename detection on
// (git's default, whatever diff.renames says), no colour, and no external
// diff or textconv, so that numbers and patches are git's own.
var diffArgs = []string{"-M", "--no-color", "--no-ext-diff", "--no-textconv"}

func diffRange(base, head string) error {
	for _, r := range []string{base, head} {
		if r == "" || strings.HasPrefix(r, "-") {
			return fmt.Errorf("invalid revision %q", r)
		}
	}
	return nil
}

// DiffStat counts the files and lines changed from base to head, as
// `git diff --numstat base head` does; a binary file counts as a changed
// file with no lines, a rename as one file.
func (m *Manager) DiffStat(ctx context.Context, dir, base, head string) (Stat, error) {
	if err := diffRange(base, head); err != nil {
		return Stat{}, fmt.Errorf("diff stat: %w", err)
	}
	if _, err := m.checkLinks(dir); err != nil {
		return Stat{}, fmt.Errorf("diff stat: %w", err)
	}
	args := append([]string{"-C", dir, "diff", "--numstat", "-z"}, diffArgs...)
	out, err := m.output(ctx, append(args, base, head, "--")...)
	if err != nil {
		return Stat{}, fmt.Errorf("diff stat %s..%s: %w", base, head, err)
	}
	st, err := parseNumstat(out)
	if err != nil {
		return Stat{}, fmt.Errorf("diff stat %s..%s: %w", base, head, err)
	}
	return st, nil
}

// parseNumstat parses `git diff --numstat -z`: "added\tdeleted\tpath\0",
// or "added\tdeleted\t\0old\0new\0" for a rename; binary files show "-".
func parseNumstat(out []byte) (Stat, error) {
	var st Stat
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) == 0 {
			continue
		}
		parts := bytes.SplitN(f, []byte{'\t'}, 3)
		if len(parts) != 3 {
			return Stat{}, fmt.Errorf("unexpected numstat record %q", f)
		}
		if len(parts[2]) == 0 {
			i += 2 // rename: old and new path follow
		}
		st.Files++
		for j, p := range parts[:2] {
			if string(p) == "-" {
				continue
			}
			n, err := strconv.Atoi(string(p))
			if err != nil {
				return Stat{}, fmt.Errorf("unexpected numstat record %q", f)
			}
			if j == 0 {
				st.Insertions += n
			} else {
				st.Deletions += n
			}
		}
	}
	return st, nil
}

// WriteDiff writes the patch from base to head to w, binary files included
// (`git diff --binary`), with a/ and b/ prefixes whatever the user's diff
// config says, so that `git apply` takes it.
func (m *Manager) WriteDiff(ctx context.Context, dir, base, head string, w io.Writer) error {
	if err := diffRange(base, head); err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	if _, err := m.checkLinks(dir); err != nil {
		return fmt.Errorf("write diff: %w", err)
	}
	args := append([]string{"-C", dir, "diff", "--binary", "--src-prefix=a/", "--dst-prefix=b/"}, diffArgs...)
	if _, err := m.exec(ctx, run{args: append(args, base, head, "--"), stdout: w}); err != nil {
		return fmt.Errorf("write diff %s..%s: %w", base, head, err)
	}
	return nil
}
