package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/tail"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// testManager returns a Manager whose git sees none of the developer's
// configuration: HOME and GIT_CONFIG_GLOBAL point at a temp dir and file
// holding only what the test asks for.
func testManager(t testing.TB, globalConfig string) *Manager {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	if err := os.WriteFile(cfg, []byte(globalConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return &Manager{Env: []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_GLOBAL=" + cfg,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(home),
	}}
}

const identityConfig = "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// gitT runs git for a test and returns its trimmed stdout.
func gitT(t testing.TB, m *Manager, dir string, args ...string) string {
	t.Helper()
	out, err := m.output(testCtx(t), append([]string{"-C", dir}, args...)...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// userGit runs git in dir as the user or an agent would, without the
// settings pneuma gives its own commands: hooks run, core.fsmonitor is
// asked. Tests use it to show that what pneuma must not run does run
// otherwise.
func userGit(t testing.TB, m *Manager, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(testCtx(t), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = m.env(nil)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a repository with two commits on main and returns its
// directory, symlinks resolved.
func newRepo(t testing.TB, m *Manager) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, m, dir, "init", "-q", "-b", "main")
	writeFile(t, dir, "README.md", "hello\n")
	writeFile(t, dir, "src/a.txt", "one\ntwo\nthree\n")
	gitT(t, m, dir, "add", "-A")
	gitT(t, m, dir, "commit", "-q", "-m", "first")
	writeFile(t, dir, "README.md", "hello\nworld\n")
	gitT(t, m, dir, "commit", "-q", "-am", "second")
	return dir
}

func TestRoot(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	linked := filepath.Join(t.TempDir(), "linked")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: linked, Branch: "l"}); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()

	tests := []struct {
		name    string
		dir     string
		want    string
		notRepo bool
	}{
		{name: "top level", dir: repo, want: repo},
		{name: "subdirectory", dir: filepath.Join(repo, "src"), want: repo},
		{name: "linked worktree", dir: linked, want: repo},
		{name: "linked worktree subdirectory", dir: filepath.Join(linked, "src"), want: repo},
		{name: "through a symlink", dir: link, want: repo},
		{name: "not a repository", dir: plain, notRepo: true},
		{name: "missing directory", dir: filepath.Join(plain, "nope"), notRepo: true},
		{name: "a file", dir: filepath.Join(repo, "README.md"), notRepo: true},
		{name: "inside .git", dir: filepath.Join(repo, ".git"), notRepo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := m.Root(ctx, tt.dir)
			if tt.notRepo {
				var nr *NotRepoError
				if !errors.As(err, &nr) {
					t.Fatalf("Root(%s) = %q, %v; want *NotRepoError", tt.dir, got, err)
				}
				if !strings.Contains(err.Error(), "is not a git repository") {
					t.Errorf("error %q does not say what is wrong", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Root(%s) = %q, %v; want %q", tt.dir, got, err, tt.want)
			}
		})
	}
}

func TestResolveRef(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	head := gitT(t, m, repo, "rev-parse", "HEAD")
	first := gitT(t, m, repo, "rev-parse", "HEAD~1")
	gitT(t, m, repo, "tag", "light", first)
	gitT(t, m, repo, "tag", "-a", "-m", "annotated", "v1.0", head)
	gitT(t, m, repo, "branch", "feature", first)
	gitT(t, m, repo, "branch", "cafe", first) // a branch that looks like a short sha
	linked := filepath.Join(t.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: linked, Branch: "w", Base: first}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		dir, ref string
		want     string
		goGit    bool // answered without the git CLI
	}{
		{repo, "HEAD", head, true},
		{repo, "main", head, true},
		{repo, "feature", first, true},
		{repo, "refs/heads/feature", first, true},
		{repo, "heads/feature", first, true},
		{repo, "light", first, true},
		{repo, "v1.0", head, true},
		{repo, "cafe", first, true},
		{repo, head, head, true},
		{repo, head[:7], head, true},
		{repo, strings.ToUpper(head[:9]), head, true},
		{repo, "HEAD~1", first, true},
		{repo, "HEAD^", first, true},
		{repo, "main^1~0", first, true},
		{repo, "v1.0^{commit}", head, false},
		{repo, "main@{0}", head, false},
		{repo, ":/first", first, false},
		{filepath.Join(repo, "src"), "HEAD", head, true},
		{linked, "HEAD", first, true},
		{linked, "main", head, true},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := m.ResolveRef(ctx, tt.dir, tt.ref)
			if err != nil || got != tt.want {
				t.Fatalf("ResolveRef(%s) = %q, %v; want %q", tt.ref, got, err, tt.want)
			}
			sha, ok := m.resolveGoGit(tt.dir, tt.ref)
			if ok != tt.goGit || ok && sha != tt.want {
				t.Errorf("resolveGoGit(%s) = %q, %v; want go-git to answer: %v", tt.ref, sha, ok, tt.goGit)
			}
		})
	}

	for _, ref := range []string{"nope", "refs/heads/nope", "HEAD~5", "deadbeef", "-h", "main:README.md", ""} {
		t.Run("missing "+ref, func(t *testing.T) {
			got, err := m.ResolveRef(ctx, repo, ref)
			var re *RefError
			if !errors.As(err, &re) || re.Ref != ref {
				t.Fatalf("ResolveRef(%q) = %q, %v; want *RefError", ref, got, err)
			}
		})
	}

	if _, err := m.ResolveRef(ctx, t.TempDir(), "HEAD"); !errors.As(err, new(*NotRepoError)) {
		t.Errorf("ResolveRef outside a repository: %v; want *NotRepoError", err)
	}
	if got, err := m.Head(ctx, linked); err != nil || got != first {
		t.Errorf("Head(linked) = %q, %v; want %q", got, err, first)
	}

	// Known commits are remembered per object store: the sha of an
	// annotated tag still peels, and another repository without the
	// commit does not borrow it.
	tag := gitT(t, m, repo, "rev-parse", "v1.0")
	for range 2 {
		if got, err := m.ResolveRef(ctx, repo, tag); err != nil || got != head {
			t.Errorf("ResolveRef(tag object) = %q, %v; want %q", got, err, head)
		}
	}
	other := t.TempDir()
	gitT(t, m, other, "init", "-q", "-b", "main")
	gitT(t, m, other, "commit", "-q", "--allow-empty", "-m", "another history")
	if got, err := m.ResolveRef(ctx, other, head); !errors.As(err, new(*RefError)) {
		t.Errorf("ResolveRef(a commit of another repository) = %q, %v; want *RefError", got, err)
	}
}

// refExists says whether ref (a full name) exists in repo, as git says.
func refExists(t testing.TB, m *Manager, repo, ref string) bool {
	t.Helper()
	_, err := m.output(testCtx(t), "-C", repo, "show-ref", "--verify", "--quiet", ref)
	return err == nil
}

// TestHeadRefs checks Head, which go-git answers without a git process,
// against git's own answers: loose and packed refs, a linked worktree, a
// detached HEAD, an unborn branch.
func TestHeadRefs(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	head := gitT(t, m, repo, "rev-parse", "HEAD")
	first := gitT(t, m, repo, "rev-parse", "HEAD~1")
	linked := filepath.Join(t.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: linked, Branch: "w", Base: first}); err != nil {
		t.Fatal(err)
	}
	detached := filepath.Join(t.TempDir(), "d")
	gitT(t, m, repo, "worktree", "add", "-q", "--detach", detached, first)

	heads := func(when string) {
		t.Helper()
		for _, tc := range []struct{ dir, want string }{{repo, head}, {linked, first}, {detached, first}} {
			spawned := m.spawned.Load()
			if got, err := m.Head(ctx, tc.dir); err != nil || got != tc.want {
				t.Errorf("%s: Head(%s) = %q, %v; want %q", when, tc.dir, got, err, tc.want)
			}
			if n := m.spawned.Load() - spawned; n != 0 {
				t.Errorf("%s: Head(%s) started %d git processes; go-git reads it", when, tc.dir, n)
			}
		}
	}
	heads("loose refs")
	// Packed: the refs are no longer files; go-git reads packed-refs.
	gitT(t, m, repo, "pack-refs", "--all")
	heads("packed refs")

	// Unborn: HEAD names a branch that does not exist yet.
	empty := t.TempDir()
	gitT(t, m, empty, "init", "-q", "-b", "main")
	if _, err := m.Head(ctx, empty); !errors.As(err, new(*RefError)) {
		t.Errorf("Head of an unborn branch: %v; want *RefError", err)
	}
}

func TestCreateConcurrent(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	root := t.TempDir()

	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = m.Create(ctx, CreateOptions{
				Repo:   repo,
				Path:   filepath.Join(root, "job"+strconv.Itoa(i)),
				Branch: fmt.Sprintf("pneuma/run1/job%d", i),
				Base:   "main",
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Create job%d: %v", i, err)
		}
	}
	list, err := m.List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != n+1 {
		t.Fatalf("List has %d worktrees, want %d: %+v", len(list), n+1, list)
	}
	if list[0].Path != repo || list[0].Branch != "main" {
		t.Errorf("first worktree = %+v, want the main one at %s", list[0], repo)
	}
	for i := range n {
		dir := filepath.Join(root, "job"+strconv.Itoa(i))
		i := slices.IndexFunc(list, func(in Info) bool { return in.Path == dir })
		if i < 0 {
			t.Errorf("worktree %s not listed", dir)
			continue
		}
		if list[i].Head != base || !strings.HasPrefix(list[i].Branch, "pneuma/run1/job") {
			t.Errorf("worktree %+v: want head %s on its branch", list[i], base)
		}
		if got, err := m.Head(ctx, dir); err != nil || got != base {
			t.Errorf("Head(%s) = %q, %v; want %s", dir, got, err, base)
		}
	}
}

// TestCreateExisting checks a removed worktree out again on its branch,
// with what was committed on it.
func TestCreateExisting(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "job"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "work.txt", "done\n")
	gitT(t, m, path, "add", "-A")
	gitT(t, m, path, "commit", "-q", "-m", "work")
	tip := gitT(t, m, path, "rev-parse", "HEAD")
	if err := m.Remove(ctx, repo, path); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "job"}); !errors.As(err, new(*ExistsError)) {
		t.Fatalf("a new branch over an existing one: %v; want *ExistsError", err)
	}
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "job", Existing: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Head(ctx, path); err != nil || got != tip {
		t.Errorf("HEAD %q, %v; want the branch's tip %q", got, err, tip)
	}
	if data, err := os.ReadFile(filepath.Join(path, "work.txt")); err != nil || string(data) != "done\n" {
		t.Errorf("work.txt: %q, %v", data, err)
	}
	if st := gitT(t, m, path, "status", "--porcelain"); st != "" {
		t.Errorf("status after the checkout: %q", st)
	}
	other := filepath.Join(t.TempDir(), "o")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: other, Branch: "nope", Existing: true}); !errors.As(err, new(*RefError)) {
		t.Errorf("a missing branch: %v; want *RefError", err)
	}
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: other, Branch: "job", Existing: true}); err == nil {
		t.Error("a branch checked out in another worktree was checked out twice")
	}
	if !refExists(t, m, repo, "refs/heads/job") {
		t.Error("a failed checkout of an existing branch deleted it")
	}
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	root := t.TempDir()
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: filepath.Join(root, "taken"), Branch: "taken"}); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(root, "full")
	writeFile(t, full, "f", "x")
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		o      CreateOptions
		check  func(error) bool
		branch string // must not exist afterwards
	}{
		{"branch exists", CreateOptions{Repo: repo, Path: filepath.Join(root, "a"), Branch: "taken"},
			func(err error) bool {
				var ee *ExistsError
				return errors.As(err, &ee) && ee.Kind == "branch" && errors.Is(err, fs.ErrExist)
			}, ""},
		{"path is a worktree", CreateOptions{Repo: repo, Path: filepath.Join(root, "taken"), Branch: "b1"},
			func(err error) bool { var ee *ExistsError; return errors.As(err, &ee) && ee.Kind == "path" }, "b1"},
		{"path not empty", CreateOptions{Repo: repo, Path: full, Branch: "b2"},
			func(err error) bool { var ee *ExistsError; return errors.As(err, &ee) && ee.Kind == "path" }, "b2"},
		{"missing base", CreateOptions{Repo: repo, Path: filepath.Join(root, "c"), Branch: "b3", Base: "nope"},
			func(err error) bool { return errors.As(err, new(*RefError)) }, "b3"},
		{"invalid branch", CreateOptions{Repo: repo, Path: filepath.Join(root, "d"), Branch: "a..b"},
			func(err error) bool { return err != nil && strings.Contains(err.Error(), "invalid branch name") }, ""},
		{"not a repository", CreateOptions{Repo: t.TempDir(), Path: filepath.Join(root, "e"), Branch: "b4"},
			func(err error) bool { return errors.As(err, new(*NotRepoError)) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := m.Create(ctx, tt.o)
			if !tt.check(err) {
				t.Fatalf("Create(%+v) = %v", tt.o, err)
			}
			if tt.branch != "" && refExists(t, m, repo, "refs/heads/"+tt.branch) {
				t.Errorf("failed Create left branch %s behind", tt.branch)
			}
		})
	}

	// An existing empty directory is fine, as with git.
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: empty, Branch: "e"}); err != nil {
		t.Errorf("Create into an empty directory: %v", err)
	}
}

// TestCreateLockContention holds the branch's ref lock as another git
// would; Create must wait it out, not fail.
func TestCreateLockContention(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	// A Create without contention starts this many git processes; with the
	// lock held, the last of them (the checkout) cannot come before an add
	// that failed on the lock, so reaching that count means Create met the
	// lock. Then the lock goes, as another git's would.
	before := m.spawned.Load()
	if err := m.Create(testCtx(t), CreateOptions{Repo: repo, Path: filepath.Join(t.TempDir(), "free"), Branch: "free"}); err != nil {
		t.Fatal(err)
	}
	gits := m.spawned.Load() - before
	lock := filepath.Join(repo, ".git", "refs", "heads", "busy.lock")
	writeFile(t, filepath.Dir(lock), "busy.lock", "")
	before = m.spawned.Load()
	go func() {
		poll.Until(time.Minute, func() bool { return m.spawned.Load()-before >= gits })
		os.Remove(lock)
	}()
	path := filepath.Join(t.TempDir(), "w")
	if err := m.Create(testCtx(t), CreateOptions{Repo: repo, Path: path, Branch: "busy"}); err != nil {
		t.Fatalf("Create while a ref lock was held briefly: %v", err)
	}
	if n := m.spawned.Load() - before; n <= gits {
		t.Errorf("Create started %d git processes, as many as without the lock: it never met it", n)
	}
	if !isDir(path) || !refExists(t, m, repo, "refs/heads/busy") {
		t.Error("worktree or branch missing")
	}
}

func TestCreateCancelled(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	path := filepath.Join(t.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: path, Branch: "w"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with a cancelled context = %v", err)
	}
	if isDir(path) || refExists(t, m, repo, "refs/heads/w") {
		t.Error("cancelled Create left a worktree or branch behind")
	}
}

func TestExclude(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	linked := filepath.Join(t.TempDir(), "w")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: linked, Branch: "w"}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(repo, ".git", "info", "exclude")
	// No trailing newline: the pattern must still land on its own line.
	if err := os.WriteFile(file, []byte("# mine\n*.tmp"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{repo, linked, repo, filepath.Join(linked, "src")} {
		if err := m.Exclude(dir, "/.pneuma/"); err != nil {
			t.Fatalf("Exclude from %s: %v", dir, err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), "# mine\n*.tmp\n/.pneuma/\n"; got != want {
		t.Errorf("exclude file = %q, want %q", got, want)
	}
	writeFile(t, repo, ".pneuma/runs/x", "x")
	if files, err := m.Status(ctx, repo); err != nil || len(files) != 0 {
		t.Errorf("Status with .pneuma excluded = %v, %v; want clean", files, err)
	}
	if err := m.Exclude(repo, "a\nb"); err == nil {
		t.Error("Exclude accepted a pattern with a newline")
	}

	// A repository without info/ gets one.
	bare := newRepo(t, m)
	if err := os.RemoveAll(filepath.Join(bare, ".git", "info")); err != nil {
		t.Fatal(err)
	}
	if err := m.Exclude(bare, "/.pneuma/"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(bare, ".git", "info", "exclude")); string(data) != "/.pneuma/\n" {
		t.Errorf("new exclude file = %q", data)
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	if files, err := m.Status(ctx, repo); err != nil || len(files) != 0 {
		t.Fatalf("Status of a clean repo = %v, %v", files, err)
	}
	writeFile(t, repo, "new dir/with space.txt", "x")
	writeFile(t, repo, "README.md", "changed\n")
	writeFile(t, repo, ".gitignore", "*.log\n")
	writeFile(t, repo, "debug.log", "ignored\n")
	gitT(t, m, repo, "mv", "src/a.txt", "src/b.txt")
	files, err := m.Status(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	want := []string{".gitignore", "README.md", "new dir/with space.txt", "src/b.txt"}
	if !slices.Equal(files, want) {
		t.Errorf("Status = %q, want %q", files, want)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "index.lock")); err == nil {
		t.Error("Status left index.lock behind")
	}
}

func TestCommitAll(t *testing.T) {
	// Not parallel: it clears identity variables from the process environment.
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	tests := []struct {
		name   string
		config string
		author string
	}{
		{"configured identity", identityConfig, "Test User <test@example.com>"},
		{"no identity", "[init]\n\tdefaultBranch = main\n", "pneuma <pneuma@localhost>"},
		{"only a name", "[user]\n\tname = Only Name\n", "Only Name <pneuma@localhost>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup := testManager(t, identityConfig)
			repo := newRepo(t, setup)
			m := &Manager{Env: slices.Clone(setup.Env)}
			cfg := filepath.Join(t.TempDir(), "gitconfig")
			if err := os.WriteFile(cfg, []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			m.Env = append(m.Env, "GIT_CONFIG_GLOBAL="+cfg)
			ctx := testCtx(t)
			base := gitT(t, m, repo, "rev-parse", "HEAD")

			// Hooks must not run: one would reject the commit, one would mark it.
			hooks := filepath.Join(repo, ".git", "hooks")
			writeFile(t, hooks, "pre-commit", "#!/bin/sh\nexit 1\n")
			writeFile(t, hooks, "post-commit", "#!/bin/sh\ntouch post-commit-ran\n")
			for _, h := range []string{"pre-commit", "post-commit"} {
				if err := os.Chmod(filepath.Join(hooks, h), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := userGit(t, m, repo, "-c", "user.name=c", "-c", "user.email=c@c", "commit", "--allow-empty", "-m", "control"); err == nil {
				t.Fatal("control: a plain git commit passed the failing pre-commit hook")
			}

			writeFile(t, repo, "added.txt", "new\n")
			writeFile(t, repo, "deep/untracked/file.go", "package x\n")
			writeFile(t, repo, "README.md", "modified\n")
			if err := os.Remove(filepath.Join(repo, "src", "a.txt")); err != nil {
				t.Fatal(err)
			}
			sha, committed, err := m.CommitAll(ctx, repo, "", "pneuma: leftover changes")
			if err != nil || !committed {
				t.Fatalf("CommitAll = %q, %v, %v", sha, committed, err)
			}
			if head := gitT(t, m, repo, "rev-parse", "HEAD"); sha != head || sha == base {
				t.Errorf("CommitAll sha %s, HEAD %s, base %s", sha, head, base)
			}
			if got := gitT(t, m, repo, "log", "-1", "--format=%an <%ae>"); got != tt.author {
				t.Errorf("author = %q, want %q", got, tt.author)
			}
			if got := gitT(t, m, repo, "log", "-1", "--format=%s"); got != "pneuma: leftover changes" {
				t.Errorf("message = %q", got)
			}
			changed := gitT(t, m, repo, "diff", "--name-status", base, sha)
			for _, want := range []string{"A\tadded.txt", "A\tdeep/untracked/file.go", "M\tREADME.md", "D\tsrc/a.txt"} {
				if !strings.Contains(changed, want) {
					t.Errorf("commit lacks %q:\n%s", want, changed)
				}
			}
			if _, err := os.Stat(filepath.Join(repo, "post-commit-ran")); err == nil {
				t.Error("post-commit hook ran")
			}
			if files, _ := m.Status(ctx, repo); len(files) != 0 {
				t.Errorf("still dirty after CommitAll: %v", files)
			}

			again, committed, err := m.CommitAll(ctx, repo, "", "nothing")
			if err != nil || committed || again != sha {
				t.Errorf("CommitAll with nothing to commit = %q, %v, %v; want %q, false, nil", again, committed, err, sha)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base := gitT(t, m, repo, "rev-parse", "HEAD")
	writeFile(t, repo, "README.md", "hello\nthere\nworld\n")
	writeFile(t, repo, "src/new.txt", "1\n2\n3\n4\n")
	writeFile(t, repo, "bin.dat", "\x00\x01\x02binary\x00")
	writeFile(t, repo, "odd\tname\n.txt", "tab and newline\n")
	gitT(t, m, repo, "mv", "src/a.txt", "src/renamed.txt")
	gitT(t, m, repo, "add", "-A")
	gitT(t, m, repo, "commit", "-q", "-m", "change")
	head := gitT(t, m, repo, "rev-parse", "HEAD")

	got, err := m.DiffStat(ctx, repo, base, head)
	if err != nil {
		t.Fatal(err)
	}
	// The reference: plain `git diff --numstat`, summed here.
	var want Stat
	for _, line := range strings.Split(gitT(t, m, repo, "diff", "--numstat", base, head), "\n") {
		f := strings.SplitN(line, "\t", 3)
		want.Files++
		a, _ := strconv.Atoi(f[0])
		d, _ := strconv.Atoi(f[1])
		want.Insertions += a
		want.Deletions += d
	}
	if got != want || got.Files != 5 {
		t.Errorf("DiffStat = %+v, git diff --numstat says %+v (want 5 files)", got, want)
	}
	if empty, err := m.DiffStat(ctx, repo, head, head); err != nil || empty != (Stat{}) {
		t.Errorf("DiffStat of no change = %+v, %v", empty, err)
	}
	if _, err := m.DiffStat(ctx, repo, "--output=/tmp/x", head); err == nil {
		t.Error("DiffStat accepted an option as base")
	}

	var patch bytes.Buffer
	if err := m.WriteDiff(ctx, repo, base, head, &patch); err != nil {
		t.Fatal(err)
	}
	ref := gitT(t, m, repo, "diff", "--binary", base, head)
	if strings.TrimSpace(patch.String()) != ref {
		t.Errorf("WriteDiff differs from git diff --binary:\n%s\n---\n%s", patch.String(), ref)
	}
	// The patch applied to base gives head's tree.
	check := filepath.Join(t.TempDir(), "check")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: check, Branch: "check", Base: base}); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(t.TempDir(), "diff.patch")
	if err := os.WriteFile(pf, patch.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, m, check, "apply", "--index", pf)
	if diff := gitT(t, m, check, "diff", "--cached", "--stat", head); diff != "" {
		t.Errorf("patch applied to base differs from head:\n%s", diff)
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	root := t.TempDir()
	create := func(name string) string {
		p := filepath.Join(root, name)
		if err := m.Create(ctx, CreateOptions{Repo: repo, Path: p, Branch: "pneuma/r/" + name}); err != nil {
			t.Fatal(err)
		}
		return p
	}

	dirtyFiles := map[string]func(dir string){
		"untracked": func(dir string) { writeFile(t, dir, "new/file.txt", "x") },
		"modified":  func(dir string) { writeFile(t, dir, "README.md", "changed") },
		"staged": func(dir string) {
			writeFile(t, dir, "staged.txt", "x")
			gitT(t, m, dir, "add", "staged.txt")
		},
		"deleted": func(dir string) { os.Remove(filepath.Join(dir, "README.md")) },
	}
	for name, dirty := range dirtyFiles {
		t.Run("refuses "+name, func(t *testing.T) {
			p := create(name)
			dirty(p)
			err := m.Remove(ctx, repo, p)
			var de *DirtyError
			if !errors.As(err, &de) || len(de.Files) != 1 {
				t.Fatalf("Remove of a worktree with a %s file = %v; want *DirtyError", name, err)
			}
			if !isDir(p) {
				t.Fatal("dirty worktree was removed")
			}
		})
	}

	clean := create("clean")
	writeFile(t, clean, "work.txt", "committed work\n")
	sha, _, err := m.CommitAll(ctx, clean, "", "work")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, repo, clean); err != nil {
		t.Fatalf("Remove of a clean worktree: %v", err)
	}
	if _, err := os.Stat(clean); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("worktree directory still there: %v", err)
	}
	if got, err := m.ResolveRef(ctx, repo, "pneuma/r/clean"); err != nil || got != sha {
		t.Errorf("branch after Remove = %q, %v; want it kept at %s", got, err, sha)
	}
	list, err := m.List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(list, func(in Info) bool { return in.Path == clean }) {
		t.Errorf("removed worktree still listed: %+v", list)
	}

	// A worktree whose directory vanished is pruned.
	gone := create("gone")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, repo, gone); err != nil {
		t.Errorf("Remove of a vanished worktree: %v", err)
	}
	list, _ = m.List(ctx, repo)
	if slices.ContainsFunc(list, func(in Info) bool { return in.Path == gone }) {
		t.Errorf("vanished worktree not pruned: %+v", list)
	}

	// Errors from git name the command and carry its message.
	err = m.Remove(ctx, repo, filepath.Join(repo, "src"))
	if err == nil || !strings.Contains(err.Error(), "git worktree remove: exit status 128: fatal: ") {
		t.Errorf("Remove of a non-worktree = %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "src")); err != nil {
		t.Errorf("Remove of a clean directory that is not a linked worktree touched it: %v", err)
	}
	if err := m.Remove(ctx, repo, repo); err == nil {
		t.Errorf("Remove of the main worktree succeeded")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		t.Errorf("the main worktree was touched: %v", err)
	}
}

func TestParseList(t *testing.T) {
	out := "worktree /r\nHEAD 1111\nbranch refs/heads/main\n\n" +
		"worktree /r/w1\nHEAD 2222\ndetached\nlocked reason here\n\n" +
		"worktree /r/w2\nHEAD 3333\nbranch refs/heads/pneuma/x/y\nprunable gitdir file points to non-existent location\n\n"
	want := []Info{
		{Path: "/r", Head: "1111", Branch: "main"},
		{Path: "/r/w1", Head: "2222", Detached: true, Locked: true},
		{Path: "/r/w2", Head: "3333", Branch: "pneuma/x/y", Prunable: true},
	}
	if got := parseList([]byte(out)); !slices.Equal(got, want) {
		t.Errorf("parseList = %+v, want %+v", got, want)
	}
	if got := parseList([]byte("worktree /b\nbare\n")); len(got) != 1 || !got[0].Bare {
		t.Errorf("bare = %+v", got)
	}
}

func TestCommandError(t *testing.T) {
	e := &CommandError{
		Args:   []string{"-C", "/r", "-c", "a=b", "worktree", "add", "--quiet", "-b", "x", "--", "/p", "abc"},
		Stderr: "fatal: cannot lock ref 'refs/heads/x': File exists.\n\nAnother git process seems to be\nrunning in this repository.\nhint: wait",
		Err:    errors.New("exit status 128"),
	}
	want := "git worktree add: exit status 128: fatal: cannot lock ref 'refs/heads/x': File exists. " +
		"Another git process seems to be running in this repository.; hint: wait"
	if got := e.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestStderrText(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"cut start marked, trimmed", 8, []string{"hello ", "wörld!"}, "...wörld!"},
		{"progress redraws dropped", 1024, []string{"Updating files: 10% (1/10)\rUpdating files: 100% (10/10), done.\r\nfatal: boom\n"},
			"Updating files: 100% (10/10), done.\nfatal: boom"},
		{"cut inside a rune", 5, []string{"xé", "abcd"}, "...abcd"},
		{"one long write", 4, []string{"0123456789"}, "...6789"},
		{"only space", 16, []string{" \n\r\n"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := tail.New(tt.max)
			for _, w := range tt.writes {
				tb.Write([]byte(w))
			}
			if got := stderrText(tb); got != tt.want {
				t.Errorf("stderrText() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRepoEnvIgnored runs with GIT_DIR and GIT_WORK_TREE exported, as in a
// git hook: commands must still act on the directory they are given.
func TestRepoEnvIgnored(t *testing.T) {
	m := testManager(t, identityConfig)
	repo, other := newRepo(t, m), newRepo(t, m)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))
	ctx := testCtx(t)
	if got, err := m.Root(ctx, filepath.Join(repo, "src")); err != nil || got != repo {
		t.Errorf("Root = %q, %v; want %q", got, err, repo)
	}
	writeFile(t, repo, "x.txt", "x")
	if files, err := m.Status(ctx, repo); err != nil || !slices.Equal(files, []string{"x.txt"}) {
		t.Errorf("Status = %q, %v", files, err)
	}
}

func TestReuse(t *testing.T) {
	m := testManager(t, identityConfig)
	repo := newRepo(t, m)
	ctx := testCtx(t)
	base, err := m.Head(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(repo, ".pneuma", "wt", "first")
	if err := m.Create(ctx, CreateOptions{Repo: repo, Path: first, Branch: "job/first", Base: base}); err != nil {
		t.Fatal(err)
	}
	// The first job changes, commits, and leaves ignored build output.
	writeFile(t, first, "README.md", "changed by first\n")
	writeFile(t, first, "new.txt", "first\n")
	writeFile(t, first, ".gitignore", "build/\n")
	writeFile(t, first, filepath.Join("build", "out.bin"), "artifact\n")
	if _, _, err := m.CommitAll(ctx, first, "", "first"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, first, filepath.Join("build", "more.bin"), "ignored, uncommitted\n")
	// An ignored file is not "uncommitted work" for Status; Reuse may drop it.
	second := filepath.Join(repo, ".pneuma", "wt", "second")
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: first, Path: second, Branch: "job/second", Base: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first); !os.IsNotExist(err) {
		t.Errorf("the old path still exists: %v", err)
	}
	// The new worktree is exactly the base: no file of the first job.
	for _, gone := range []string{"new.txt", ".gitignore", "build"} {
		if _, err := os.Stat(filepath.Join(second, gone)); !os.IsNotExist(err) {
			t.Errorf("%s leaked from the first job into the second", gone)
		}
	}
	if head, _ := m.Head(ctx, second); head != base {
		t.Errorf("second is at %s, want the base %s", head, base)
	}
	if files, err := m.Status(ctx, second); err != nil || len(files) != 0 {
		t.Errorf("second is not clean: %v %v", files, err)
	}
	list, _ := m.List(ctx, repo)
	var branches []string
	for _, in := range list {
		branches = append(branches, in.Branch)
	}
	if !slices.Contains(branches, "job/second") || slices.Contains(branches, "job/first") {
		t.Errorf("worktrees %+v", list)
	}
	// The first job's branch and work are kept.
	if out := gitT(t, m, repo, "show", "job/first:new.txt"); strings.TrimSpace(out) != "first" {
		t.Errorf("first's branch lost its work: %q", out)
	}
	// A worktree with uncommitted work is refused and left alone.
	writeFile(t, second, "wip.txt", "wip\n")
	third := filepath.Join(repo, ".pneuma", "wt", "third")
	var dirty *DirtyError
	if err := m.Reuse(ctx, ReuseOptions{Repo: repo, From: second, Path: third, Branch: "job/third", Base: base}); !errors.As(err, &dirty) {
		t.Errorf("Reuse of a dirty worktree = %v, want a DirtyError", err)
	}
	if _, err := os.Stat(filepath.Join(second, "wip.txt")); err != nil {
		t.Errorf("uncommitted work was touched: %v", err)
	}
}

// listed finds a linked worktree by its path as given, resolved, or as
// another spelling of a listed path, and never the main worktree.
func TestListed(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "wt"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	list := []Info{{Path: filepath.Join(real, "main")}, {Path: filepath.Join(real, "other")}, {Path: filepath.Join(real, "wt")}}
	for _, c := range []struct {
		path string
		want bool
	}{
		{filepath.Join(real, "wt"), true},
		{filepath.Join(link, "wt"), true}, // resolved once
		{filepath.Join(real, "main"), false},
		{filepath.Join(real, "nope"), false},
	} {
		if got := listed(list, c.path); got != c.want {
			t.Errorf("listed(%s) = %v, want %v", c.path, got, c.want)
		}
	}
	// A listed path that is itself another spelling (a symlink) of the path.
	if !listed([]Info{{Path: "/main"}, {Path: filepath.Join(link, "wt")}}, filepath.Join(real, "wt")) {
		t.Error("listed missed a listed path that resolves to the path")
	}
	if listed(list[:1], filepath.Join(real, "main")) {
		t.Error("listed found the main worktree")
	}
}
