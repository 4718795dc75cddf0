package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// objectsJob is a job's box in a linked worktree of a new repository, and
// what runs a script inside it (synced after) and git outside.
type objectsJob struct {
	root, repo, wt, branch string
	box                    *Box
	env                    []string
	git                    func(dir string, args ...string) string
}

func newObjectsJob(t *testing.T) *objectsJob {
	t.Helper()
	bwrap, root, repo, env, git := baseRepo(t)
	wt := filepath.Join(repo, ".pneuma", "worktrees", "r1", "mine")
	git(repo, "worktree", "add", "-q", "-b", "pneuma/r1/mine", wt)
	box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: wt, Repo: repo, Home: root, StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { box.Close() })
	return &objectsJob{root: root, repo: repo, wt: wt, branch: "pneuma/r1/mine", box: box, env: env, git: git}
}

// baseRepo is testRepo with a commit of base.txt on main, and bubblewrap.
func baseRepo(t *testing.T) (bwrap, root, repo string, env []string, git func(dir string, args ...string) string) {
	t.Helper()
	bwrap = needBwrap(t)
	root, repo, env, git = testRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "base.txt"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "base.txt")
	git(repo, "commit", "-q", "-m", "base")
	return bwrap, root, repo, env, git
}

// run runs script in the sandbox, then syncs; it returns the output.
func (j *objectsJob) run(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := j.box.Command(j.wt, []string{"/bin/sh", "-c", script})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	// Set outside, git's object directory would send the commits elsewhere.
	cmd.Env = j.box.Env(append(slices.Clone(j.env), "GIT_OBJECT_DIRECTORY="+filepath.Join(j.root, "elsewhere")))
	out, _ := cmd.CombinedOutput() // judged by the repository outside
	j.box.SyncRefs()
	return string(out)
}

// has reports whether the repository's store holds object id.
func (j *objectsJob) has(id string) bool {
	cmd := exec.Command("git", "-C", j.repo, "cat-file", "-e", id)
	cmd.Env = j.env
	return cmd.Run() == nil
}

// sharedObject is the path of a loose object of the shared store: main's
// head commit.
func (j *objectsJob) sharedObject(t *testing.T) (id, path string) {
	t.Helper()
	id = j.git(j.repo, "rev-parse", "main")
	path = filepath.Join(j.repo, ".git", "objects", id[:2], id[2:])
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return id, path
}

// attackShared is a script that removes, overwrites and opens for write
// the object file at path, as the repository's store shows it at path and
// (inside) below insideObjects.
func attackShared(id, path string) string {
	in := insideStore(filepath.Dir(filepath.Dir(path))) + "/" + id[:2] + "/" + id[2:]
	var b strings.Builder
	b.WriteString("test -f " + in + " && echo shown=ok\n")
	for _, p := range []string{path, in} {
		b.WriteString("chmod u+w " + p + " && echo chmod=ok\n")
		b.WriteString("echo junk > " + p + " && echo overwrite=ok\n")
		b.WriteString("rm " + p + " && echo rm=ok\n")
	}
	return b.String()
}

// Inside, the shared object store cannot be changed: not its files, not
// through the path git knows it by nor the one it is shown at. The same
// script outside the sandbox does the damage (the test can fail).
func TestBoxSharedObjectsReadOnly(t *testing.T) {
	j := newObjectsJob(t)
	id, path := j.sharedObject(t)
	out := j.run(t, attackShared(id, path))
	if !strings.Contains(out, "shown=ok") {
		t.Errorf("inside, the shared store is not shown below %s:\n%s", insideObjects, out)
	}
	for _, done := range []string{"chmod=ok", "overwrite=ok", "rm=ok"} {
		if strings.Contains(out, done) {
			t.Errorf("inside: %s on the shared store:\n%s", done, out)
		}
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the shared object after the job: %v", err)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")

	// Unconfined, the same script removes it.
	cmd := exec.Command("/bin/sh", "-c", attackShared(id, path))
	cmd.Env = j.env
	if out, _ := cmd.CombinedOutput(); !strings.Contains(string(out), "rm=ok") {
		t.Fatalf("unconfined, the script did not remove the object:\n%s", out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("unconfined, the object is still there")
	}
}

// git add and git commit work inside; the commit reaches the job's branch
// and its objects the shared store, checked; the blob git add wrote inside
// reaches it too, so pneuma's commit of the leftovers outside works; a
// pack git repack wrote inside moves as well; a sync with nothing new runs
// no git.
func TestBoxObjectsMoveThroughGit(t *testing.T) {
	j := newObjectsJob(t)
	out := j.run(t, `echo a > a && git add a && git commit -q -m inside && echo commit=ok
echo b > b && git add b && echo add=ok`)
	if !strings.Contains(out, "commit=ok") || !strings.Contains(out, "add=ok") {
		t.Fatalf("git inside failed:\n%s", out)
	}
	if log := j.git(j.repo, "log", "-1", "--format=%s", j.branch); log != "inside" {
		t.Errorf("the job's branch outside: %q, want its commit inside", log)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	blob := j.git(j.wt, "rev-parse", ":b")
	if !j.has(blob) {
		t.Errorf("the blob git add wrote inside (%s) is not in the shared store", blob)
	}
	// pneuma's CommitAll outside: git add -A, commit.
	j.git(j.wt, "add", "-A")
	j.git(j.wt, "commit", "-q", "-m", "leftovers")
	if files := j.git(j.repo, "ls-tree", "--name-only", j.branch); files != "a\nb\nbase.txt" {
		t.Errorf("the leftovers commit holds %q", files)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	if n := privObjects(t, j); n != 0 {
		t.Errorf("%d objects left in the private store after the sync", n)
	}

	// A pack written inside moves too.
	out = j.run(t, `echo c > c && git add c && git commit -q -m packed && git repack -q -d -l && echo repack=ok; ls "$(git rev-parse --git-common-dir)/objects/pack"`)
	if !strings.Contains(out, "repack=ok") || !strings.Contains(out, ".pack") {
		t.Fatalf("git repack inside:\n%s", out)
	}
	if log := j.git(j.repo, "log", "-1", "--format=%s", j.branch); log != "packed" {
		t.Errorf("after a repack inside, the job's branch: %q", log)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	if errs := j.box.Report().RefErrors; len(errs) != 0 {
		t.Errorf("ref errors: %v", errs)
	}

	// More objects than git's unpack limit move as a pack.
	out = j.run(t, `for i in $(seq 150); do echo "blob $i" | git hash-object -w --stdin; done | tail -1`)
	if last := strings.TrimSpace(out); !objectID(last) || !j.has(last) {
		t.Errorf("150 blobs written inside: the last, %q, is not in the shared store", last)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	if n := privObjects(t, j); n != 0 {
		t.Errorf("%d objects left in the private store after the sync", n)
	}

	// Nothing new: no git runs (none can: PATH is empty).
	t.Setenv("PATH", "")
	j.box.SyncRefs()
	if errs := j.box.Report().RefErrors; len(errs) != 0 {
		t.Errorf("a sync with nothing new ran git: %v", errs)
	}
}

// privObjects counts the object files in the job's private store.
func privObjects(t *testing.T, j *objectsJob) int {
	t.Helper()
	n := 0
	priv := filepath.Join(j.root, "state", "git", "objects", objPriv)
	err := filepath.WalkDir(priv, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The agent cannot make pneuma read objects from elsewhere on the host
// into the shared store (which it can read): not by alternates written
// where git reads them, not by a link planted as an object or as an
// object directory of the private store.
func TestBoxObjectsFromElsewhereRefused(t *testing.T) {
	j := newObjectsJob(t)
	secret := filepath.Join(j.root, "secret")
	if err := os.MkdirAll(secret, 0o700); err != nil {
		t.Fatal(err)
	}
	j.git(secret, "init", "-q")
	cmd := exec.Command("git", "-C", secret, "hash-object", "-w", "--stdin")
	cmd.Env, cmd.Stdin = j.env, strings.NewReader("the user's secret\n")
	raw, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(raw))
	so := filepath.Join(secret, ".git", "objects")
	out := j.run(t, `objs="$(git rev-parse --git-common-dir)/objects"
echo `+so+` > "$objs/info/alternates" && echo alternates=ok
echo `+so+` >> `+insideStore(filepath.Join(j.repo, ".git", "objects"))+`/info/alternates && echo shared-alternates=ok
mkdir -p "$objs/`+id[:2]+`" && ln -s `+so+`/`+id[:2]+`/`+id[2:]+` "$objs/`+id[:2]+`/`+id[2:]+`" && echo link=ok
echo x > x && git add x && git commit -q -m inside && echo commit=ok`)
	for _, done := range []string{"alternates=ok", "shared-alternates=ok"} {
		if strings.Contains(out, done) {
			t.Errorf("inside: %s:\n%s", done, out)
		}
	}
	if !strings.Contains(out, "link=ok") || !strings.Contains(out, "commit=ok") {
		t.Fatalf("inside:\n%s", out)
	}
	// A directory of the store that is a link out of it.
	j.run(t, `objs="$(git rev-parse --git-common-dir)/objects"; rm -rf "$objs/`+id[:2]+`" && ln -s `+so+`/`+id[:2]+` "$objs/`+id[:2]+`"`)
	if j.has(id) {
		t.Fatal("the secret object reached the shared store")
	}
	if _, err := os.Stat(filepath.Join(j.repo, ".git", "objects", "info", "alternates")); err == nil {
		t.Error("alternates were written into the shared store")
	}
	if log := j.git(j.repo, "log", "-1", "--format=%s", j.branch); log != "inside" {
		t.Errorf("the job's branch outside: %q, want its commit inside", log)
	}
	errs := strings.Join(j.box.Report().RefErrors, "\n")
	if !strings.Contains(errs, "not regular files") {
		t.Errorf("the link planted as an object is not in the report: %q", errs)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
}

// A loose object whose content is not what its name says (a blob git add
// staged), and a malformed tree, are refused with an error in the report
// and stored under no name; the job's good commit still reaches its
// branch, and pneuma's commit of the leftovers outside still works (the
// index that named the refused blob is reset, the file kept).
func TestBoxBadObjectsRefused(t *testing.T) {
	j := newObjectsJob(t)
	out := j.run(t, `set -e
objs="$(git rev-parse --git-common-dir)/objects"
echo good > good && git add good && git commit -q -m good
echo hello > h && touch -d 2020-01-01 h && git add h && a=$(git rev-parse :h) # not racily clean: git add -A outside trusts the index
b=$(echo evil | git hash-object -w --stdin)
fa="$objs/$(echo $a | cut -c1-2)/$(echo $a | cut -c3-)"
fb="$objs/$(echo $b | cut -c1-2)/$(echo $b | cut -c3-)"
chmod u+w "$fa" && cat "$fb" > "$fa" && rm -f "$fb"
t=$(printf 'not a tree' | git hash-object -t tree --literally -w --stdin)
touch "$(git rev-parse --git-dir)/index.lock" # a git inside still at work
echo "a=$a b=$b t=$t"`)
	var a, b, tree string
	for _, f := range strings.Fields(out[strings.LastIndex(out, "a="):]) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "a":
			a = v
		case "b":
			b = v
		case "t":
			tree = v
		}
	}
	if a == "" || b == "" || tree == "" {
		t.Fatalf("inside:\n%s", out)
	}
	for name, id := range map[string]string{"the misnamed object": a, "its content": b, "the malformed tree": tree} {
		if j.has(id) {
			t.Errorf("%s (%s) reached the shared store", name, id)
		}
	}
	errs := strings.Join(j.box.Report().RefErrors, "\n")
	if !strings.Contains(errs, "not what its name says") || !strings.Contains(errs, "refused") {
		t.Errorf("the report's errors: %q", errs)
	}
	if log := j.git(j.repo, "log", "-1", "--format=%s", j.branch); log != "good" {
		t.Errorf("the job's branch outside: %q, want its good commit", log)
	}
	// The index is reset once its lock is gone, at a later sync.
	if !strings.Contains(errs, "reset it to HEAD") || strings.Contains(errs, "the files are kept") {
		t.Errorf("with the index locked, the report's errors: %q", errs)
	}
	if err := os.Remove(filepath.Join(j.repo, ".git", "worktrees", "mine", "index.lock")); err != nil {
		t.Fatal(err)
	}
	j.box.SyncRefs()
	if errs := strings.Join(j.box.Report().RefErrors, "\n"); !strings.Contains(errs, "reset to HEAD (the files are kept)") {
		t.Errorf("the index that named the refused blob was not reset: %q", errs)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	// pneuma's CommitAll outside.
	j.git(j.wt, "add", "-A")
	j.git(j.wt, "commit", "-q", "-m", "leftovers")
	if got := j.git(j.repo, "show", j.branch+":h"); got != "hello" {
		t.Errorf("the leftovers commit holds h = %q, want hello", got)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
}

// A malformed tree among many good objects (a commit of 120 files) is
// found by halving the batch: the good ones all move, the commit reaches
// the branch, nothing stays in the private store.
func TestBoxBadObjectAmongMany(t *testing.T) {
	j := newObjectsJob(t)
	out := j.run(t, `set -e
mkdir many && for i in $(seq 120); do echo "file $i" > many/$i; done
git add many && git commit -q -m many
printf 'not a tree' | git hash-object -t tree --literally -w --stdin`)
	tree := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if !objectID(tree) {
		t.Fatalf("inside:\n%s", out)
	}
	if j.has(tree) {
		t.Error("the malformed tree reached the shared store")
	}
	if log := j.git(j.repo, "log", "-1", "--format=%s", j.branch); log != "many" {
		t.Errorf("the job's branch outside: %q, want its commit", log)
	}
	if errs := strings.Join(j.box.Report().RefErrors, "\n"); !strings.Contains(errs, "1 object(s) git wrote inside refused, the others moved: "+tree) {
		t.Errorf("the report's errors: %q", errs)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
	if n := privObjects(t, j); n != 0 {
		t.Errorf("%d objects left in the private store after the sync", n)
	}
}

// A sync that runs out of time keeps what it could not settle in the
// private store, and the next sync moves it: nothing is lost.
func TestObjStoreKeepsWhatItCannotSettle(t *testing.T) {
	root, repo, env, git := testRepo(t)
	s := newObjStore(filepath.Join(repo, ".git"), filepath.Join(root, "state", "objects"))
	if len(s.binds()) == 0 {
		t.Fatal("no binds")
	}
	cmd := exec.Command("git", "-C", repo, "hash-object", "-w", "--stdin")
	cmd.Env = append(slices.Clone(env), "GIT_OBJECT_DIRECTORY="+filepath.Join(s.root, objPriv))
	cmd.Stdin = strings.NewReader("kept\n")
	raw, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(raw))
	has := func() bool { return exec.Command("git", "-C", repo, "cat-file", "-e", id).Run() == nil }
	saved := syncTime
	syncTime = 0
	err = s.sync()
	syncTime = saved
	if err == nil || !strings.Contains(err.Error(), "tried again at the next sync") || has() {
		t.Fatalf("a sync out of time: %v, object stored %v", err, has())
	}
	if err := s.sync(); err != nil || !has() {
		t.Fatalf("the next sync: %v, object stored %v", err, has())
	}
	git(repo, "fsck", "--strict", "--no-dangling")
}

// Syncs while git inside commits (as a result event syncs while a tool
// still runs) lose nothing: every commit reaches the branch, the shared
// store stays whole.
func TestBoxObjectsSyncWhileCommitting(t *testing.T) {
	j := newObjectsJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := j.box.Command(j.wt, []string{"/bin/sh", "-c", `for i in $(seq 40); do echo $i > f && git add f && git commit -q -m c$i || exit 1; done; echo all=ok`})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = j.box.Env(j.env)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for syncing := true; syncing; {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("inside: %v", err)
			}
			syncing = false
		default:
			j.box.SyncRefs()
		}
	}
	j.box.SyncRefs()
	if !strings.Contains(out.String(), "all=ok") {
		t.Fatalf("git inside failed while pneuma synced:\n%s", out.String())
	}
	if n := j.git(j.repo, "rev-list", "--count", "main.."+j.branch); n != "40" {
		t.Errorf("%s commits on the branch, want 40; errors %v", n, j.box.Report().RefErrors)
	}
	j.git(j.repo, "fsck", "--strict", "--no-dangling")
}

// A repository whose history is in another object store (git clone
// --shared or --reference, its alternates absolute or relative, that store
// outside everything the sandbox shows): git inside reads that history and
// commits on it, and the commit reaches the branch outside; in a linked
// worktree and in the repository itself.
func TestBoxObjectsOfAlternates(t *testing.T) {
	for _, c := range []struct {
		name              string
		relative, inPlace bool
	}{{"absolute", false, false}, {"relative", true, false}, {"in the repository itself", true, true}} {
		relative := c.relative
		t.Run(c.name, func(t *testing.T) {
			bwrap, root, origin, env, git := baseRepo(t)
			repo := filepath.Join(root, "work", "clone")
			git(root, "clone", "-q", "--shared", origin, repo)
			objects := filepath.Join(repo, ".git", "objects")
			if relative {
				rel, err := filepath.Rel(objects, filepath.Join(origin, ".git", "objects"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(objects, "info", "alternates"), []byte(rel+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			git(repo, "config", "user.name", "t") // so that commits need no environment inside
			git(repo, "config", "user.email", "t@t")
			wt, branch := filepath.Join(repo, ".pneuma", "worktrees", "r1", "mine"), "pneuma/r1/mine"
			if c.inPlace {
				wt, branch = repo, "main" // the clone is on main
			} else {
				git(repo, "worktree", "add", "-q", "-b", branch, wt)
			}
			box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: wt, Repo: repo, Home: root, StateDir: filepath.Join(t.TempDir(), "state")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { box.Close() })
			j := &objectsJob{root: root, repo: repo, wt: wt, branch: branch, box: box, env: env, git: git}
			out := j.run(t, `git log -1 --format=log=%s && git cat-file -p HEAD:base.txt && echo a > a && git add a && git commit -q -m inside && echo commit=ok`)
			if !strings.Contains(out, "log=base") || !strings.Contains(out, "commit=ok") || strings.Contains(out, "error") {
				t.Fatalf("git inside, on history in the alternate store:\n%s", out)
			}
			if log := git(repo, "log", "-1", "--format=%s", j.branch); log != "inside" {
				t.Errorf("the job's branch outside: %q, want its commit inside", log)
			}
			git(repo, "fsck", "--strict", "--no-dangling")
		})
	}
}
