package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

func TestMain(m *testing.M) {
	if code, ok := RunForwarder(os.Args[1:], Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// needBwrap returns bubblewrap's path; without it the test fails in CI and
// is skipped elsewhere.
func needBwrap(t *testing.T) string {
	t.Helper()
	path, err := Check()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return path
}

func TestBoxConfinesAShell(t *testing.T) {
	bwrap := needBwrap(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	for _, d := range []string{home, work, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("SECRET-KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	listed, gotListed := echoServer(t)
	unlisted, gotUnlisted := echoServer(t)
	box, err := Open(Config{
		Spec: Spec{Enabled: true, Network: []string{"127.0.0.1:" + strconv.Itoa(listed)}}, Bwrap: bwrap,
		Dir: work, Home: home, StateDir: filepath.Join(root, "state"), APIURL: "http://127.0.0.1:80",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	script := `
cat $HOME/.ssh/id_ed25519 2>/dev/null || echo no-key
echo x > ` + filepath.Join(root, "outside") + ` 2>/dev/null || echo no-outside-write
echo ok > in-work && echo work-write
exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(listed) + ` && echo hi >&3 && head -n1 <&3
(exec 3<>/dev/tcp/127.0.0.1/` + strconv.Itoa(unlisted) + `) 2>/dev/null || echo no-unlisted
curl -s -o /dev/null -w '%{http_code}\n' http://10.9.9.9/ || true
`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	argv := box.Command(work, []string{"/bin/bash", "-c", script})
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = box.Env([]string{"PATH=/usr/bin:/bin", "HOME=" + home})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sandboxed shell: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"no-key", "work-write", "echo:hi", "no-unlisted", "403"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SECRET-KEY") {
		t.Errorf("the key was read:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(root, "outside")); err == nil {
		t.Error("a file outside the worktree was written")
	}
	if _, err := os.Stat(filepath.Join(work, "in-work")); err != nil {
		t.Errorf("the worktree write did not land: %v", err)
	}
	if len(gotListed) != 1 || len(gotUnlisted) != 0 {
		t.Errorf("listed port got %d connections, unlisted %d; want 1 and 0", len(gotListed), len(gotUnlisted))
	}
	rep := box.Report()
	if len(rep.Refused) != 1 || rep.Refused[0].Host != "10.9.9.9:80" {
		t.Errorf("refused = %+v, want 10.9.9.9:80 once", rep.Refused)
	}
}

// Signal reaches the command past bubblewrap, which would end the whole
// sandbox at once: the command handles SIGINT and exits its own way.
func TestSignalReachesTheCommand(t *testing.T) {
	bwrap := needBwrap(t)
	work := t.TempDir()
	box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: work, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	argv := box.Command(work, []string{"/bin/sh", "-c", `trap 'echo int > got; exit 7' INT; touch ready; while :; do sleep 0.05; done`})
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = box.Env([]string{"PATH=/usr/bin:/bin"})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := func() bool { _, err := os.Stat(filepath.Join(work, "ready")); return err == nil }
	if !poll.Until(20*time.Second, ready) {
		t.Fatal("the command did not start")
	}
	if err := Signal(cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("bwrap ended with %v, want the command's own exit 7", err)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "got")); string(data) != "int\n" {
		t.Errorf("the command's trap did not run: %q", data)
	}
	if _, err := forwarderOf(os.Getpid()); err == nil {
		t.Error("found a forwarder under a process that runs none")
	}
}

// A job's commits inside reach its branch; no other ref does: not another
// job's, not a new name beside its own, not a loose ref over a packed one.
func TestBoxRefs(t *testing.T) {
	bwrap := needBwrap(t)
	root, repo, env, git := testRepo(t)
	git(repo, "branch", "pneuma/r1/packed")
	git(repo, "pack-refs", "--all") // pneuma/r1/packed lives in packed-refs only
	git(repo, "branch", "pneuma/r1/other")
	wt := filepath.Join(repo, ".pneuma", "worktrees", "r1", "mine")
	git(repo, "worktree", "add", "-q", "-b", "pneuma/r1/mine", wt)
	base := git(repo, "rev-parse", "main")
	box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: wt, Repo: repo, Home: root, StateDir: filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	run := func(script string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		argv := box.Command(wt, []string{"/bin/sh", "-c", script})
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = box.Env(env)
		out, _ := cmd.CombinedOutput() // judged by the repository outside
		box.SyncRefs()
		return string(out)
	}
	out := run(`echo a > a && git add a && git commit -q -m inside && echo commit=ok
git update-ref refs/heads/pneuma/r1/packed HEAD && echo packed=ok
git update-ref refs/heads/pneuma/r1/other HEAD && echo other=ok
git update-ref refs/heads/pneuma/r1/new HEAD && echo new=ok
git update-ref refs/heads/main HEAD && echo main=ok
git update-ref refs/tags/t HEAD && echo tag=ok`)
	if !strings.Contains(out, "commit=ok") {
		t.Fatalf("the commit inside failed:\n%s", out)
	}
	if log := git(repo, "log", "--format=%s", "pneuma/r1/mine"); !strings.HasPrefix(log, "inside") {
		t.Errorf("the job's branch outside: %q, want its commit inside first", log)
	}
	for _, b := range []string{"pneuma/r1/packed", "pneuma/r1/other", "main"} {
		if got := git(repo, "rev-parse", b); got != base {
			t.Errorf("%s moved to %s from inside", b, got)
		}
	}
	for _, r := range []string{"refs/heads/pneuma/r1/new", "refs/tags/t"} {
		if cmd := exec.Command("git", "-C", repo, "rev-parse", "--verify", "-q", r); cmd.Run() == nil {
			t.Errorf("%s was created from inside", r)
		}
	}
	// Pneuma's commit outside is seen by the next command inside.
	git(wt, "commit", "-q", "--allow-empty", "-m", "outside")
	if out := run(`git log -1 --format=%s`); !strings.Contains(out, "outside") {
		t.Errorf("inside after a commit outside: %q", out)
	}
	// A link planted where the ref is carried in is replaced, not followed.
	victim := filepath.Join(root, "victim")
	run(`ln -s ` + victim + ` "$(git rev-parse --git-common-dir)/refs/heads/pneuma/r1/mine.pneuma-tmp"; git commit -q --allow-empty -m again`)
	git(wt, "commit", "-q", "--allow-empty", "-m", "outside2")
	box.SyncRefs()
	if _, err := os.Lstat(victim); err == nil {
		t.Error("sync followed a link planted inside")
	}
	if log := git(repo, "log", "-3", "--format=%s", "pneuma/r1/mine"); log != "outside2\nagain\noutside" {
		t.Errorf("the branch after commits both sides in turn: %q", log)
	}
	if errs := box.Report().RefErrors; len(errs) != 0 {
		t.Errorf("ref errors: %v", errs)
	}
}

// TestBoxShowsOnlyTheCLI: of $HOME the sandbox shows the CLI alone, in each
// way it is installed: a single-file binary in ~/bin (beside an unrelated
// package.json), the native installer's ~/.local/bin/claude symlink to its
// versions/X, an npm package run through node_modules/.bin/claude, and an
// npm cli.js run by nvm's node beside its bin/claude. The CLI runs by the
// path it is given, its npm package's own files are
// readable, and no file beside it is.
func TestBoxShowsOnlyTheCLI(t *testing.T) {
	bwrap := needBwrap(t)
	const cli = "#!/bin/sh\necho cli-ran\n"
	const nvm = ".nvm/versions/node/v20.0.0/"
	tests := []struct {
		name     string
		files    map[string]string // under home; "->" marks a symlink to the rest
		binary   string
		readable []string // besides the binary
	}{
		{"single file in ~/bin", map[string]string{
			"bin/claude": cli, "bin/SECRET-sibling": "SECRET-bin", "package.json": `{"name":"dotfiles"}`,
			".ssh/id_ed25519": "SECRET-key",
		}, "bin/claude", nil},
		{"native installer", map[string]string{
			".local/share/claude/versions/2.1.0": cli, ".local/share/claude/versions/SECRET-old": "SECRET-version",
			".local/bin/claude": "->../share/claude/versions/2.1.0", ".local/bin/SECRET-tool": "SECRET-local-bin",
		}, ".local/bin/claude", nil},
		{"npm package", map[string]string{
			"lib/node_modules/@anthropic-ai/claude-code/package.json":    `{"name":"@anthropic-ai/claude-code","version":"2.1.0"}`,
			"lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe":  cli,
			"lib/node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs": "package-file",
			"lib/node_modules/.bin/claude":                               "->../@anthropic-ai/claude-code/bin/claude.exe",
			"lib/node_modules/other/SECRET.js":                           "SECRET-other-package",
		}, "lib/node_modules/.bin/claude", []string{"lib/node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs"}},
		{"npm cli.js on nvm's node", map[string]string{
			nvm + "lib/node_modules/@anthropic-ai/claude-code/package.json": `{"name":"@anthropic-ai/claude-code","version":"2.0.0"}`,
			nvm + "lib/node_modules/@anthropic-ai/claude-code/cli.js":       "#!/usr/bin/env node\n",
			nvm + "bin/claude":      "->../lib/node_modules/@anthropic-ai/claude-code/cli.js",
			nvm + "bin/node":        cli, // env finds it on PATH and runs cli.js with it
			nvm + "bin/SECRET-npx":  "SECRET-npx",
			nvm + "lib/SECRET/x.js": "SECRET-lib",
			".nvm/SECRET-alias":     "SECRET-nvm",
		}, nvm + "bin/claude", []string{nvm + "lib/node_modules/@anthropic-ai/claude-code/cli.js"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
			var secrets []string
			for rel, content := range tt.files {
				p := filepath.Join(home, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				var err error
				if target, ok := strings.CutPrefix(content, "->"); ok {
					err = os.Symlink(target, p)
				} else {
					err = os.WriteFile(p, []byte(content), 0o755)
				}
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(content, "SECRET") {
					secrets = append(secrets, p)
				}
			}
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			binary := filepath.Join(home, tt.binary)
			box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: work, Home: home, Binary: binary,
				StateDir: filepath.Join(root, "state"), APIURL: "http://127.0.0.1:80"})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			script := `"$0"; for f in "$@"; do cat "$f" 2>/dev/null && echo; done; ls -a "${0%/*}"`
			argv := append([]string{"/bin/sh", "-c", script, binary}, secrets...)
			for _, r := range tt.readable {
				argv = append(argv, filepath.Join(home, r))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := box.Command(work, argv)
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			cmd.Env = box.Env([]string{"PATH=" + filepath.Dir(binary) + ":/usr/bin:/bin", "HOME=" + home})
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("sandboxed shell: %v\n%s", err, out)
			}
			got := string(out)
			if !strings.Contains(got, "cli-ran") {
				t.Errorf("the CLI did not run by its path %s inside:\n%s", binary, got)
			}
			if strings.Contains(got, "SECRET") {
				t.Errorf("a file beside the CLI was seen inside:\n%s", got)
			}
			for _, r := range tt.readable {
				if data, _ := os.ReadFile(filepath.Join(home, r)); !strings.Contains(got, string(data)) {
					t.Errorf("the CLI's own %s was not readable inside:\n%s", r, got)
				}
			}
		})
	}
}

// TestBoxPathsKeepGitClosed: a job's read and write paths never undo what
// protects the repository: with the repository itself, its .git or its
// .pneuma as a write path (or .pneuma as a read path), the repository's
// config, hooks and other branches stay read-only and other jobs'
// worktrees hidden, while the job still commits on its own branch and the
// rest of the write path is writable. (A config written there would name a
// filter driver that pneuma's own `git add -A` runs outside.)
func TestBoxPathsKeepGitClosed(t *testing.T) {
	bwrap := needBwrap(t)
	root, repo, env, git := testRepo(t)
	other := filepath.Join(repo, ".pneuma", "worktrees", "r1", "other")
	git(repo, "worktree", "add", "-q", "-b", "pneuma/r1/other", other)
	base := git(repo, "rev-parse", "main")
	gd := filepath.Join(repo, ".git")
	for i, spec := range []Spec{
		{Enabled: true, Write: []string{repo}},
		{Enabled: true, Write: []string{gd}},
		{Enabled: true, Write: []string{filepath.Join(repo, ".pneuma")}},
		{Enabled: true, Read: []string{filepath.Join(repo, ".pneuma")}, Write: []string{gd + "/"}},
	} {
		t.Run(fmt.Sprintf("read=%v,write=%v", spec.Read, spec.Write), func(t *testing.T) {
			wt := filepath.Join(repo, ".pneuma", "worktrees", "r1", fmt.Sprintf("mine%d", i))
			branch := fmt.Sprintf("pneuma/r1/mine%d", i)
			git(repo, "worktree", "add", "-q", "-b", branch, wt)
			box, err := Open(Config{Spec: spec, Bwrap: bwrap, Dir: wt, Repo: repo, Home: root, StateDir: filepath.Join(root, "state", strconv.Itoa(i))})
			if err != nil {
				t.Fatal(err)
			}
			defer box.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			argv := box.Command(wt, []string{"/bin/sh", "-c", `echo a > a && git add a && git commit -q -m inside && echo commit=ok
git config --file ` + gd + `/config filter.evil.clean "touch ` + root + `/filter-ran" && echo config=ok
echo x > ` + gd + `/hooks/post-commit && echo hook=ok
echo x > ` + gd + `/info/attributes && echo info=ok
git update-ref refs/heads/main HEAD && echo main=ok
echo x > ` + other + `/escaped.txt && echo other-worktree=ok
cat ` + other + `/.git && echo read-other=ok
echo x > ` + repo + `/top.txt && echo top=ok`})
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Env = box.Env(env)
			out, _ := cmd.CombinedOutput()
			box.SyncRefs()
			got := string(out)
			if !strings.Contains(got, "commit=ok") {
				t.Fatalf("the commit inside failed:\n%s", got)
			}
			if log := git(repo, "log", "-1", "--format=%s", branch); log != "inside" {
				t.Errorf("the job's branch outside: %q, want its commit inside", log)
			}
			for _, escape := range []string{"config", "hook", "info", "main", "other-worktree", "read-other"} {
				if strings.Contains(got, escape+"=ok") {
					t.Errorf("%s: got through from inside:\n%s", escape, got)
				}
			}
			if cfg, _ := os.ReadFile(filepath.Join(gd, "config")); strings.Contains(string(cfg), "evil") {
				t.Errorf("the repository's config was written from inside:\n%s", cfg)
			}
			if git(repo, "rev-parse", "main") != base {
				t.Error("main moved from inside")
			}
			// The write path is honoured for the rest of what it names.
			if wantTop := spec.Write[0] == repo; strings.Contains(got, "top=ok") != wantTop {
				t.Errorf("writing the repository's checkout with write %v: %v, want %v:\n%s", spec.Write, !wantTop, wantTop, got)
			}
		})
	}

	t.Run("a write path holding a program run outside", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{filepath.Dir(self), self} {
			_, err := Open(Config{Spec: Spec{Enabled: true, Write: []string{w}}, Bwrap: bwrap, Self: self, Dir: repo, Home: root, StateDir: filepath.Join(root, "state", "self")})
			if err == nil || !strings.Contains(err.Error(), "a program pneuma runs outside") {
				t.Errorf("Open with write %s holding pneuma = %v, want refused", w, err)
			}
		}
	})
}

// testRepo makes a repository with one empty commit on main under a new
// root (its HOME), and returns them with that environment and a git runner in it.
func testRepo(t *testing.T) (root, repo string, env []string, git func(dir string, args ...string) string) {
	t.Helper()
	root = t.TempDir()
	repo = filepath.Join(root, "repo")
	env = []string{"PATH=/usr/bin:/bin", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	git = func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "init")
	return root, repo, env, git
}
