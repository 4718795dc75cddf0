package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, files map[string]string) {
	t.Helper()
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCopyConfig(t *testing.T) {
	home := t.TempDir()
	src := filepath.Join(home, ".claude")
	writeFiles(t, map[string]string{
		filepath.Join(src, "settings.json"):             `{}`,
		filepath.Join(src, ".credentials.json"):         `SECRET`,
		filepath.Join(src, "history.jsonl"):             `{}`,
		filepath.Join(src, "projects", "p", "s.jsonl"):  `{}`,
		filepath.Join(src, "agents", "reviewer.md"):     `agent`,
		filepath.Join(home, ".claude.json"):             `{"numStartups":3}`,
		filepath.Join(home, ".claude.json.backup.1234"): `{}`,
	})
	dst, err := copyConfig(Config{ConfigSrc: src, ConfigJSON: filepath.Join(home, ".claude.json"), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_ = filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			got = append(got, strings.TrimPrefix(p, dst+"/")+"="+string(data))
		}
		return nil
	})
	slices.Sort(got)
	want := []string{`.claude.json={"numStartups":3}`, ".credentials.json=", "agents/reviewer.md=agent", "settings.json={}"}
	if !slices.Equal(got, want) {
		t.Errorf("copy holds %q, want %q", got, want)
	}
}

// gitBinds opens the object store and the worktree's record, puts a
// private directory over its branch's ref directory (one bind: none per
// other ref there, whose number grows with the run) and keeps the
// repository's config and hooks read-only.
func TestGitBinds(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	repo := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	git(repo, "init", "-q", "-b", "main")
	git(repo, "commit", "-q", "--allow-empty", "-m", "init")
	git(repo, "branch", "pneuma/r1/other")
	wt := filepath.Join(repo, ".pneuma", "worktrees", "r1", "mine")
	git(repo, "worktree", "add", "-q", "-b", "pneuma/r1/mine", wt)
	state := t.TempDir()
	got := strings.Join((&Box{cfg: Config{StateDir: state}}).gitArgs(wt), " ")
	gd := filepath.Join(repo, ".git")
	for _, want := range []string{
		"--ro-bind " + gd + "/objects " + insideStore(gd+"/objects") + " --bind " + state + "/git/objects/objects " + gd + "/objects --ro-bind " + state + "/git/objects/info " + gd + "/objects/info",
		"--bind " + gd + "/worktrees/mine " + gd + "/worktrees/mine",
		"--bind " + state + "/git/refs " + gd + "/refs/heads/pneuma/r1",
		"--bind " + state + "/git/logs " + gd + "/logs/refs/heads/pneuma/r1",
		"--ro-bind " + gd + " " + gd + " --bind " + gd + "/worktrees/mine",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("gitBinds lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "r1/mine "+gd+"/refs/heads/pneuma/r1/mine") {
		t.Errorf("the job's own ref is bound read-only:\n%s", got)
	}
	// The repository's own .git is bound read-only by protect, after the
	// job's read and write paths: gitBinds binds it no second time.
	inRepo := strings.Join((&Box{cfg: Config{StateDir: state, Repo: repo}}).gitArgs(wt), " ")
	if strings.Contains(inRepo, "--ro-bind "+gd+" ") || !strings.Contains(inRepo, "--bind "+state+"/git/objects/objects "+gd+"/objects") {
		t.Errorf("gitBinds with the repository read-only:\n%s", inRepo)
	}
	all := strings.Join((&Box{cfg: Config{StateDir: state, Repo: repo, Spec: Spec{Write: []string{repo}}}}).bwrapArgs(wt), " ")
	if w, p := strings.Index(all, "--bind "+repo+" "), strings.Index(all, "--ro-bind "+gd+" "); w < 0 || p < w {
		t.Errorf("the repository's .git is not bound read-only after the write path that holds it:\n%s", all)
	}
	if !inSystemDir("/usr/bin/git") || inSystemDir(repo) || inSystemDir("/usr/../tmp") {
		t.Error("inSystemDir")
	}
	if !within(gd, repo) || within(repo+"x", repo) || within(filepath.Dir(repo), repo) {
		t.Error("within")
	}
	if strings.Contains(got, "/refs/heads/pneuma/r1/other") {
		t.Errorf("another job's ref is bound on its own (a mount per ref: bubblewrap slows with the run):\n%s", got)
	}
}

func TestEnvInside(t *testing.T) {
	b := &Box{cfg: Config{GitName: "Ada", GitEmail: "ada@example.com"}, port: 3128, configDir: "/cfg"}
	env := b.Env([]string{"PATH=/usr/bin", "NO_PROXY=*", "HTTPS_PROXY=http://evil:1", "GIT_AUTHOR_NAME=Job Bot", "CLAUDE_CONFIG_DIR=/home/me/.claude"})
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	want := map[string]string{"PATH": "/usr/bin", "HTTPS_PROXY": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128",
		"ALL_PROXY": "http://127.0.0.1:3128", "GIT_AUTHOR_NAME": "Job Bot", "GIT_COMMITTER_NAME": "Ada",
		"GIT_AUTHOR_EMAIL": "ada@example.com", "CLAUDE_CONFIG_DIR": "/cfg", "TMPDIR": "/tmp", "IS_SANDBOX": "1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s=%q, want %q", k, got[k], v)
		}
	}
	if _, ok := got["NO_PROXY"]; ok {
		t.Error("NO_PROXY kept: clients would go around the proxy, into a network that is not there")
	}
}

// The ref's value outside is read from its loose file without git, and
// asked of git when it is packed; the same either way.
func TestOwnRefOutside(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip(err)
	}
	repo := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + repo, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "init")
	git("branch", "pneuma/r1/mine")
	want := git("rev-parse", "pneuma/r1/mine")
	o := newOwnRef(filepath.Join(repo, ".git"), "refs/heads/pneuma/r1/mine", t.TempDir())
	if got := o.outside(); got != want {
		t.Errorf("loose: %q, want %q", got, want)
	}
	git("pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(repo, ".git", "refs", "heads", "pneuma", "r1", "mine")); err == nil {
		t.Fatal("the ref is still loose after pack-refs")
	}
	if got := o.outside(); got != want {
		t.Errorf("packed: %q, want %q", got, want)
	}
	git("branch", "-D", "pneuma/r1/mine")
	if got := o.outside(); got != "" {
		t.Errorf("deleted: %q, want none", got)
	}
}
