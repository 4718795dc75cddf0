package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/safefile"
)

// objStore quarantines the objects git writes inside the sandbox of a job in
// a linked worktree. Inside, the repository's object store (shared by main
// and every other branch) is read-only below insideObjects (at its own path
// there, see insideStore), with the stores its alternates name (git clone
// --shared or --reference keeps a repository's history in another), and its path
// <common>/objects shows a private object directory of the job's instead,
// whose alternates name the shared store: git inside reads every object
// and writes new ones (commits, blobs git add hashes for the index, packs
// of git repack; git gc cannot run: its lock is in the read-only git dir)
// to the private directory, whatever its environment says. The
// private directory's info is a read-only directory of pneuma's, so that
// the agent can plant no alternates there.
//
// sync moves the private objects into the shared store through git only:
// linked (never followed, never copied) into a staging directory inside
// pneuma's state, where the agent reaches nothing, packed from there by
// git pack-objects, indexed and checked by git index-pack --strict (each
// object re-hashed, its links found in the pack or the shared store)
// without touching the repository, compared with the names they had, and
// only then stored by git in the shared store. An object refused is noted
// and removed from the private directory; the others still move.
type objStore struct {
	mu sync.Mutex
	// common is the repository's git dir; root the store's state
	// directory, which holds priv (the private object directory, bound at
	// <common>/objects inside), info (bound read-only over priv/info),
	// stage (where sync links what it reads) and the pack sync makes.
	common, root string
	// dirs are the worktrees whose commands used the store, with the
	// record each had when first used.
	dirs map[string]string
	// unsure are objects refused since the worktrees' indexes were last
	// found not to name them (see repair).
	unsure []string
	// deadline ends the sync under way (see syncTime).
	deadline time.Time
}

// syncTime bounds a sync's git processes: an object the agent made slow
// to pack (a small file that inflates to gigabytes) delays the job's
// sync by that much at most, and stays for the next.
var syncTime = 2 * time.Minute

// maxUnsure bounds the refused objects repair looks for.
const maxUnsure = 4096

// Paths inside the store's state directory.
const (
	objPriv  = "objects"
	objInfo  = "info"
	objStage = "stage"
	objPack  = "incoming.pack"
)

// insideObjects is where the shared object store is shown read-only inside,
// below it at the path it has outside (insideStore).
const insideObjects = "/run/pneuma/objects"

// insideStore is where the object store at host is shown inside: a store
// its alternates name by a relative path is then shown where that path
// leads from there (see alternates).
func insideStore(host string) string { return filepath.Join(insideObjects, host) }

// altStore is an object store another names in its alternates: where it
// is, and where git inside looks for it.
type altStore struct{ host, inside string }

// maxAltDepth is how deep git follows alternates of alternates.
const maxAltDepth = 5

// maxAlternates bounds what is read of an alternates file.
const maxAlternates = 64 << 10

// alternates lists the object stores that the store at host, shown inside
// at inside, reaches through its info/alternates, as git resolves them:
// recursively, an absolute path as it is (the same inside), a relative one
// from the store that names it (so from inside, inside). Only directories
// that are object stores (they have a pack directory) are listed; a path
// that climbs above the root, as git refuses it, is left out, and so is a
// directory that holds gitDir (the repository's git dir: no object store
// does, and its bind would cover the repository and the job's worktree).
func alternates(host, inside, gitDir string, depth int, seen map[string]bool) []altStore {
	if depth >= maxAltDepth {
		return nil
	}
	f, _, err := safefile.Open(filepath.Join(host, "info", "alternates"), maxAlternates)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAlternates))
	f.Close()
	if err != nil {
		return nil
	}
	var out []altStore
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			if line, err = strconv.Unquote(line); err != nil {
				continue
			}
		}
		a := altStore{host: filepath.Clean(line), inside: filepath.Clean(line)}
		if !filepath.IsAbs(line) {
			// inside is host or insideStore(host): a path that stays below
			// host's root stays below inside's.
			if climbsAboveRoot(host, line) {
				continue
			}
			a = altStore{host: filepath.Join(host, line), inside: filepath.Join(inside, line)}
		}
		if fi, err := os.Stat(filepath.Join(a.host, "pack")); err != nil || !fi.IsDir() || seen[a.host] || within(gitDir, a.host) {
			continue
		}
		seen[a.host] = true
		out = append(out, a)
		out = append(out, alternates(a.host, a.inside, gitDir, depth+1, seen)...)
	}
	return out
}

// climbsAboveRoot says whether the relative path rel, taken from the
// absolute dir, leaves the root on the way (git refuses to normalise such
// an alternate).
func climbsAboveRoot(dir, rel string) bool {
	depth := len(strings.Split(strings.Trim(filepath.Clean(dir), "/"), "/"))
	if filepath.Clean(dir) == "/" {
		depth = 0
	}
	for part := range strings.SplitSeq(rel, "/") {
		switch part {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// maxMoves bounds the batches a sync tries when the first is refused (a
// bad object in it): each costs four git processes.
const maxMoves = 128

// unpackLimit is git's transfer.unpackLimit: smaller batches are stored as
// loose objects (git unpack-objects, which skips those the store has), the
// others as a pack (git index-pack).
const unpackLimit = 100

func newObjStore(common, root string) *objStore {
	return &objStore{common: common, root: root}
}

// binds are bubblewrap's arguments for the store, after the repository's
// git dir is bound read-only. Without its directories (an error making
// them) the shared store stays read-only inside: no commit, no escape.
func (s *objStore) binds() []string {
	if !filepath.IsAbs(s.root) {
		return nil // bubblewrap would resolve it against its own cwd
	}
	priv, info := filepath.Join(s.root, objPriv), filepath.Join(s.root, objInfo)
	for _, d := range []string{filepath.Join(priv, "info"), filepath.Join(priv, "pack"), info} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil
		}
	}
	shared := filepath.Join(s.common, "objects")
	inside := insideStore(shared)
	if err := replaceFile(filepath.Join(info, "alternates"), inside+"\n"); err != nil {
		return nil
	}
	args := []string{"--ro-bind", shared, inside}
	for _, a := range alternates(shared, inside, s.common, 0, map[string]bool{shared: true}) {
		args = append(args, "--ro-bind", a.host, a.inside)
	}
	return append(args, "--bind", priv, shared, "--ro-bind", info, filepath.Join(shared, "info"))
}

// staged is what sync took from the private directory: its loose objects
// (by id) and its packs (by base name, pack-<hash>).
type staged struct {
	loose []string
	packs []string
}

func (st staged) empty() bool { return len(st.loose) == 0 && len(st.packs) == 0 }

// use notes that a command in the worktree at dir, whose record is
// record, uses the store.
func (s *objStore) use(dir, record string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dirs == nil {
		s.dirs = map[string]string{}
	}
	if _, ok := s.dirs[dir]; !ok {
		s.dirs[dir] = record
	}
}

// sync moves the objects git wrote inside into the shared store (see
// objStore). With nothing new in the private directory it runs no process.
func (s *objStore) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return nil // never opened: nothing inside wrote there
	}
	defer root.Close()
	st := listPriv(root)
	if st.empty() {
		return nil
	}
	s.deadline = time.Now().Add(syncTime)
	defer func() { s.deadline = time.Time{} }()
	stage := filepath.Join(s.root, objStage)
	defer os.RemoveAll(stage)
	var errs []error
	st, err = s.stage(root, st)
	errs = append(errs, err)
	ids := st.loose
	if len(st.packs) > 0 {
		all, err := s.git(stage, nil, nil, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
		if err != nil {
			errs = append(errs, fmt.Errorf("sandbox: read the packs git wrote inside: %w: refused", err))
			dropPacks(root, st.packs)
			st.packs = nil
		} else {
			ids = strings.Fields(all)
		}
	}
	refused, kept, err := s.moveAll(ids)
	errs = append(errs, err)
	s.unsure = append(s.unsure, refused[:min(len(refused), maxUnsure-len(s.unsure))]...)
	keep := make(map[string]bool, len(kept))
	for _, id := range kept {
		keep[id] = true
	}
	for _, id := range st.loose {
		if !keep[id] {
			_ = root.Remove(looseName(objPriv, id)) // in the shared store now, or refused
			_ = root.Remove(filepath.Join(objPriv, id[:2]))
		}
	}
	if len(kept) == 0 {
		dropPacks(root, st.packs)
	}
	return errors.Join(errs...)
}

// repair resets the index of each worktree that used the store to its
// HEAD when it names an object the repository refused: pneuma's commit of
// what the job left (git add -A) would name a missing object and fail. The
// worktree's files are kept; git add -A stages them again. It runs git
// only after a refusal, until the indexes are found clear (a git inside
// may hold an index's lock: then the next sync tries again). Call it
// after the job's branch is carried in.
func (s *objStore) repair() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.unsure) == 0 {
		return nil
	}
	var errs []error
	clear := true
	for _, dir := range slices.Sorted(maps.Keys(s.dirs)) {
		reset, err := s.repairIndex(dir)
		switch {
		case err != nil:
			errs, clear = append(errs, err), false
		case reset:
			errs = append(errs, fmt.Errorf("sandbox: the index of %s named objects the repository refused: reset to HEAD (the files are kept)", dir))
		}
	}
	if clear {
		s.unsure = nil
	}
	return errors.Join(errs...)
}

// repairIndex resets the index of the worktree at dir to its HEAD when it
// names an object in s.unsure (s.mu held), and says whether it did.
func (s *objStore) repairIndex(dir string) (reset bool, err error) {
	// Git in dir finds its record through dir/.git and the repository
	// through the record, both writable inside: they must still be the
	// worktree's own.
	if record, common, _, err := worktreeGit(filepath.Join(dir, ".git")); err != nil || !samePath(record, s.dirs[dir]) || !samePath(common, s.common) {
		return false, fmt.Errorf("sandbox: the git metadata of %s changed: its index, which may name objects the repository refused, is left alone", dir)
	}
	staged, err := s.gitIn(dir, "ls-files", "-s")
	if err != nil {
		return false, fmt.Errorf("sandbox: read the index of %s: %w", dir, err)
	}
	named := false
	for line := range strings.Lines(staged) {
		if f := strings.Fields(line); len(f) >= 2 && slices.Contains(s.unsure, f[1]) {
			named = true
			break
		}
	}
	if !named {
		return false, nil
	}
	if _, err := s.gitIn(dir, "read-tree", "HEAD"); err != nil {
		return false, fmt.Errorf("sandbox: the index of %s names objects the repository refused; reset it to HEAD: %w", dir, err)
	}
	return true, nil
}

// looseName is the path of a loose object under dir.
func looseName(dir, id string) string { return filepath.Join(dir, id[:2], id[2:]) }

// listPriv lists the private directory: loose objects git finished
// writing (its temporary files are not), and packs with their index.
func listPriv(root *os.Root) staged {
	var st staged
	entries, _ := fs.ReadDir(root.FS(), objPriv)
	for _, e := range entries {
		if len(e.Name()) != 2 || !isHex(e.Name()) || !e.IsDir() {
			continue
		}
		objs, _ := fs.ReadDir(root.FS(), filepath.Join(objPriv, e.Name()))
		for _, o := range objs {
			if id := e.Name() + o.Name(); objectID(id) {
				st.loose = append(st.loose, id)
			}
		}
	}
	packs, _ := fs.ReadDir(root.FS(), filepath.Join(objPriv, "pack"))
	for _, p := range packs {
		if base, ok := strings.CutSuffix(p.Name(), ".idx"); ok && strings.HasPrefix(base, "pack-") {
			if _, err := root.Lstat(filepath.Join(objPriv, "pack", base+".pack")); err == nil {
				st.packs = append(st.packs, base)
			}
		}
	}
	return st
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// stage hard-links what st names into the staging directory, where the
// agent cannot swap a file for a link to one it could never read: a link
// is made of the entry itself, never of what it points to, and only a
// regular file is kept. It returns what was staged.
func (s *objStore) stage(root *os.Root, st staged) (staged, error) {
	_ = root.RemoveAll(objStage)
	if err := root.MkdirAll(filepath.Join(objStage, "pack"), 0o700); err != nil {
		return staged{}, fmt.Errorf("sandbox: stage the objects git wrote inside: %w", err)
	}
	var out staged
	var bad []string
	link := func(name string) bool {
		from, to := filepath.Join(objPriv, name), filepath.Join(objStage, name)
		if err := root.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return false
		}
		if err := root.Link(from, to); err != nil {
			return false // gone, or a link out of the directory: nothing to move
		}
		if fi, err := root.Lstat(to); err != nil || !fi.Mode().IsRegular() {
			bad = append(bad, name)
			_ = root.Remove(to)
			_ = root.Remove(from)
			return false
		}
		return true
	}
	for _, id := range st.loose {
		if link(filepath.Join(id[:2], id[2:])) {
			out.loose = append(out.loose, id)
		}
	}
	for _, p := range st.packs {
		if link(filepath.Join("pack", p+".pack")) && link(filepath.Join("pack", p+".idx")) {
			out.packs = append(out.packs, p)
		}
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("sandbox: %d file(s) in the job's object store are not regular files (%s): refused", len(bad), strings.Join(bad[:min(3, len(bad))], ", "))
	}
	return out, nil
}

// dropPacks removes packs from the private directory, their index first.
func dropPacks(root *os.Root, packs []string) {
	for _, p := range packs {
		for _, ext := range []string{".idx", ".pack", ".rev", ".bitmap", ".keep", ".mtimes", ".promisor"} {
			_ = root.Remove(filepath.Join(objPriv, "pack", p+ext))
		}
	}
}

// moveAll moves ids into the shared store: in one batch, else (a bad
// object in it) in halves, and halves of those, each refused half without
// the objects whose content is not what their name says, until the bad
// objects are alone; in rounds, blobs first, until a round moves nothing
// (an object whose links went to another half moves in the next). It
// returns the ids refused, and those kept for the next sync when the
// batches (maxMoves) or the time (syncTime) ran out before they were
// settled.
func (s *objStore) moveAll(ids []string) (refused, kept []string, err error) {
	m := &mover{s: s, budget: maxMoves, why: map[string]error{}}
	left := m.split(ids)
	if len(left) > 0 {
		left = s.byType(left)
	}
	for len(left) > 0 && m.budget > 0 && time.Now().Before(s.deadline) {
		n := len(left)
		if left = m.split(left); len(left) == n {
			break
		}
	}
	refused = m.bad
	if len(left) > 0 && (m.budget <= 0 || time.Now().After(s.deadline)) {
		kept = left
	} else {
		refused = append(refused, left...)
	}
	var errs []error
	if len(refused) > 0 {
		reasons := make([]string, 0, 3)
		for _, id := range refused[:min(3, len(refused))] {
			reasons = append(reasons, fmt.Sprintf("%s: %v", id, m.why[id]))
		}
		errs = append(errs, fmt.Errorf("sandbox: %d object(s) git wrote inside refused, the others moved: %s", len(refused), strings.Join(reasons, "; ")))
	}
	if len(kept) > 0 {
		errs = append(errs, fmt.Errorf("sandbox: %d object(s) git wrote inside not moved yet (a bad object among them): tried again at the next sync", len(kept)))
	}
	return refused, kept, errors.Join(errs...)
}

// mover splits refused batches (see moveAll).
type mover struct {
	s      *objStore
	budget int              // batches left to try
	why    map[string]error // why an object was refused
	bad    []string         // objects whose content is not what their name says
}

// split moves ids, else halves of them, and returns those not moved.
func (m *mover) split(ids []string) []string {
	if len(ids) == 0 || m.budget <= 0 || time.Now().After(m.s.deadline) {
		return ids
	}
	m.budget--
	mismatched, err := m.s.move(ids)
	switch {
	case err == nil:
		return nil
	case len(mismatched) > 0:
		for _, id := range mismatched {
			m.why[id] = err
		}
		m.bad = append(m.bad, mismatched...)
		return m.split(slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return slices.Contains(mismatched, id) }))
	case len(ids) == 1:
		m.why[ids[0]] = err
		return ids
	}
	mid := len(ids) / 2
	return slices.Concat(m.split(ids[:mid]), m.split(ids[mid:]))
}

// typeRank orders objects so that what others link to comes first.
var typeRank = map[string]int{"blob": 0, "tree": 1, "commit": 2, "tag": 3}

// byType orders ids blobs, trees, commits, tags (as they were when git
// cannot tell).
func (s *objStore) byType(ids []string) []string {
	out, err := s.git(filepath.Join(s.root, objStage), strings.NewReader(strings.Join(ids, "\n")+"\n"), nil,
		"cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return ids
	}
	rank := map[string]int{}
	for line := range strings.Lines(out) {
		if id, typ, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			rank[id] = typeRank[typ]
		}
	}
	sorted := slices.Clone(ids)
	slices.SortStableFunc(sorted, func(a, b string) int { return rank[a] - rank[b] })
	return sorted
}

// move packs ids from the staging directory, checks the pack (see
// objStore) and stores it in the shared store. It returns the ids whose
// content is not what their name says, when that is why it refused them.
func (s *objStore) move(ids []string) (mismatched []string, err error) {
	stage, pack := filepath.Join(s.root, objStage), filepath.Join(s.root, objPack)
	idx := strings.TrimSuffix(pack, ".pack") + ".idx"
	defer os.Remove(pack)
	defer os.Remove(idx)
	defer os.Remove(strings.TrimSuffix(pack, ".pack") + ".rev") // none asked for; whatever git's config says
	f, err := os.OpenFile(pack, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: move the objects git wrote inside: %w", err)
	}
	defer f.Close()
	list := strings.NewReader(strings.Join(ids, "\n") + "\n")
	if _, err := s.git(stage, list, f, "pack-objects", "-q", "--stdout"); err != nil {
		return nil, err
	}
	if _, err := s.git("", nil, nil, "index-pack", "--strict", "--no-rev-index", "-o", idx, pack); err != nil {
		return nil, err
	}
	ix, err := os.Open(idx)
	if err != nil {
		return nil, fmt.Errorf("sandbox: move the objects git wrote inside: %w", err)
	}
	shown, err := s.git("", ix, nil, "show-index")
	ix.Close()
	if err != nil {
		return nil, fmt.Errorf("sandbox: move the objects git wrote inside: %w", err)
	}
	packed := map[string]bool{}
	for line := range strings.Lines(shown) {
		if fields := strings.Fields(line); len(fields) >= 2 {
			packed[fields[1]] = true
		}
	}
	for _, id := range ids {
		if !packed[id] {
			mismatched = append(mismatched, id)
		}
	}
	if len(mismatched) > 0 {
		return mismatched, errors.New("its content is not what its name says")
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("sandbox: move the objects git wrote inside: %w", err)
	}
	store := []string{"unpack-objects", "-q", "--strict"}
	if len(ids) > unpackLimit {
		store = []string{"index-pack", "--stdin", "--strict"}
	}
	if _, err := s.git("", f, nil, store...); err != nil {
		return nil, fmt.Errorf("sandbox: store the objects git wrote inside: %w", err)
	}
	return nil, nil
}

// gitIn runs pneuma's own git in the worktree at dir (its own index),
// never the agent's hooks or fsmonitor.
func (s *objStore) gitIn(dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return runGit(ctx, "", nil, nil, append([]string{"-C", dir}, args...))
}

// git runs pneuma's own git on the repository, until the sync's deadline
// (s.mu held); objects, when not "", is the object directory it reads
// instead of the repository's.
func (s *objStore) git(objects string, stdin io.Reader, stdout io.Writer, args ...string) (string, error) {
	deadline := s.deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(syncTime)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	return runGit(ctx, objects, stdin, stdout, append([]string{"--git-dir", s.common}, args...))
}

// runGit runs git with args, never the agent's hooks or fsmonitor, with no
// object directory or alternates from the environment (objects, when not
// "", is the object directory), and returns what it printed (nothing when
// stdout is given).
func runGit(ctx context.Context, objects string, stdin io.Reader, stdout io.Writer, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor="}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "GIT_OBJECT_DIRECTORY" || k == "GIT_ALTERNATE_OBJECT_DIRECTORIES" || k == "GIT_DIR" ||
			k == "GIT_WORK_TREE" || k == "GIT_INDEX_FILE" || k == "GIT_QUARANTINE_PATH"
	})
	if objects != "" {
		cmd.Env = append(cmd.Env, "GIT_OBJECT_DIRECTORY="+objects)
	}
	cmd.Stdin = stdin
	var out, stderr bytes.Buffer
	cmd.Stdout = &out
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		name := args[0]
		if name == "-C" || name == "--git-dir" {
			name = args[2]
		}
		return "", fmt.Errorf("git %s: %w: %s", name, err, strings.ReplaceAll(strings.TrimSpace(stderr.String()), "\n", "; "))
	}
	return out.String(), nil
}
