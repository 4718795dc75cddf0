package history

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// writeSession writes a one-call session run in cwd under cfg.
func writeSession(t *testing.T, cfg, cwd, sid string) {
	t.Helper()
	p := filepath.Join(cfg, "projects", ProjectDirName(cwd), sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"assistant","cwd":"` + cwd + `","sessionId":"` + sid + `","timestamp":"2026-11-20T10:00:00.000Z","requestId":"req_` + sid +
		`","message":{"id":"msg_` + sid + `","model":"claude-opus-4-8","role":"assistant","content":[],"usage":{"input_tokens":10,"output_tokens":1}}}` + "\n"
	if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestProjectFilterAndWorktrees(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(root, "repo")
	wt := filepath.Join(root, "repo-wt")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
	git(t, repo, "worktree", "add", "-q", wt)

	cfg := t.TempDir()
	writeSession(t, cfg, repo, "s-repo")
	writeSession(t, cfg, wt, "s-worktree")
	writeSession(t, cfg, filepath.Join(root, "other"), "s-other")

	ctx := context.Background()
	for _, tt := range []struct {
		include bool
		want    int
	}{{false, 1}, {true, 2}} {
		c, err := Scan(ctx, cfg, ScanOptions{Filter: Filter{Project: repo, IncludeWorktrees: tt.include}})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(c.Sessions()); got != tt.want {
			t.Errorf("--project with include-worktrees=%v: %d sessions, want %d", tt.include, got, tt.want)
		}
		if got := c.Total().APICalls; got != tt.want {
			t.Errorf("include-worktrees=%v: %d calls, want %d", tt.include, got, tt.want)
		}
	}
}
