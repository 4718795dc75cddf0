package history

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Expected values come from running the CLI's own function (reference 4.2)
// under node.
func TestProjectDirName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/home/me/proj", "-home-me-proj"},
		{"/a.b_c d-e", "-a-b-c-d-e"},
		{"/x/ünï cödé 日本", "-x--n--c-d----"},
		{"emoji😀", "emoji--"},
		{"/p/" + strings.Repeat("a", 197), "-p-" + strings.Repeat("a", 197)},
		{"/home/me/" + strings.Repeat("M", 250), "-home-me-" + strings.Repeat("M", 191) + "-zbofue"},
		{"/tmp/" + strings.Repeat("日本語😀/", 40), "-tmp-" + strings.Repeat("-", 195) + "-8h9gbz"},
	}
	for _, tt := range tests {
		if got := ProjectDirName(tt.in); got != tt.want {
			t.Errorf("ProjectDirName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestConfigDir(t *testing.T) {
	env := map[string]string{"HOME": "/home/me"}
	get := func(k string) string { return env[k] }
	if got := ConfigDir(get); got != "/home/me/.claude" {
		t.Errorf("ConfigDir = %q", got)
	}
	// NFD "é" (e + U+0301) is normalised to NFC, as the CLI does.
	env["CLAUDE_CONFIG_DIR"] = "/cfg/cafe\u0301"
	if got := ConfigDir(get); got != "/cfg/caf\u00e9" {
		t.Errorf("ConfigDir = %q, want NFC", got)
	}
}

func TestSessionPath(t *testing.T) {
	cfg := t.TempDir()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	realResolved, _ := filepath.EvalSymlinks(real)
	sid := "11111111-2222-4333-8444-555555555555"
	write := func(dir, cwd string) string {
		p := filepath.Join(cfg, "projects", dir, sid+".jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		line := `{"type":"user","cwd":"` + cwd + `","sessionId":"` + sid + `","message":{"role":"user","content":"hi"}}` + "\n"
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := write(ProjectDirName(realResolved), realResolved)
	got, err := SessionPath(cfg, link, sid)
	if err != nil || got != want {
		t.Fatalf("SessionPath via symlink = %q, %v; want %q", got, err, want)
	}

	// A colliding encoding (a.b vs a_b) is told apart by the cwd field; the
	// scan fallback finds the file whose cwd matches.
	cfg2 := t.TempDir()
	cfg = cfg2
	write(ProjectDirName("/x/a_b"), "/x/a.b-other")
	p2 := write("elsewhere", "/x/a_b")
	got, err = SessionPath(cfg2, "/x/a_b", sid)
	if err != nil || got != p2 {
		t.Fatalf("SessionPath with collision = %q, %v; want %q", got, err, p2)
	}

	if _, err := SessionPath(cfg2, "/nowhere", "99999999-0000-4000-8000-000000000000"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing session: err = %v, want ErrNotFound", err)
	}
	if _, err := SessionPath(cfg2, "/x", "../escape"); err == nil {
		t.Error("a session id with a path separator was accepted")
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	cfg := "testdata"
	s, err := Resolve(ctx, cfg, "aaaaaaaa")
	if err != nil || s.ID != "aaaaaaaa-1111-4111-8111-111111111111" || s.ProjectDir != "-home-me-proj" {
		t.Fatalf("Resolve(prefix) = %+v, %v", s, err)
	}
	if _, err := Resolve(ctx, cfg, "bbbbbbbb-2222-4222-8222-222222222222"); err != nil {
		t.Fatalf("Resolve(full id): %v", err)
	}
	p := filepath.Join(cfg, "projects", "-srv-other", "cccccccc-3333-4333-8333-333333333333.jsonl")
	if s, err := Resolve(ctx, cfg, p); err != nil || s.ID != "cccccccc-3333-4333-8333-333333333333" {
		t.Fatalf("Resolve(path) = %+v, %v", s, err)
	}
	if _, err := Resolve(ctx, cfg, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Resolve(unknown) err = %v", err)
	}
	var amb *AmbiguousError
	if _, err := Resolve(ctx, cfg, ""); !errors.As(err, &amb) || len(amb.Matches) != 3 {
		t.Errorf("Resolve(\"\") err = %v, want ambiguous over 3", err)
	}
}

// TestResolveIDNeverAPath: ResolveID (the server's) takes ids and id
// prefixes and refuses anything else before touching a file, where Resolve
// (the command line's) reads a path.
func TestResolveIDNeverAPath(t *testing.T) {
	ctx := context.Background()
	cfg := "testdata"
	if s, err := ResolveID(ctx, cfg, "aaaaaaaa"); err != nil || s.ID != "aaaaaaaa-1111-4111-8111-111111111111" {
		t.Fatalf("ResolveID(prefix) = %+v, %v", s, err)
	}
	p := filepath.Join(cfg, "projects", "-srv-other", "cccccccc-3333-4333-8333-333333333333.jsonl")
	abs, _ := filepath.Abs(p)
	for _, id := range []string{p, abs, "cccccccc-3333-4333-8333-333333333333.jsonl", "/etc/passwd", "..", "../..", `..\x`, "", "a.b", strings.Repeat("a", 65)} {
		var ie *InvalidIDError
		if s, err := ResolveID(ctx, cfg, id); !errors.As(err, &ie) {
			t.Errorf("ResolveID(%q) = %+v, %v; want an InvalidIDError", id, s, err)
		}
	}
	if _, err := ResolveID(ctx, cfg, "zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ResolveID(unknown) err = %v", err)
	}
	if s, err := Resolve(ctx, cfg, p); err != nil || s.ID != "cccccccc-3333-4333-8333-333333333333" {
		t.Fatalf("Resolve(path) still reads a path: %+v, %v", s, err)
	}
}

func TestListSessionsSkipsDirectories(t *testing.T) {
	got, err := ListSessions(context.Background(), "testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("ListSessions = %d sessions, want 3 (subagents, memory/ and <sid>/ are not sessions): %+v", len(got), got)
	}
	if subs := got[0].Subagents(); len(subs) != 1 {
		t.Errorf("Subagents of %s = %v", got[0].ID, subs)
	}
}

func TestIsWorktreeOf(t *testing.T) {
	repo := t.TempDir()
	wt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git", "worktrees", "w1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "w1")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !IsWorktreeOf(wt, repo) {
		t.Error("linked worktree not recognised")
	}
	if IsWorktreeOf(t.TempDir(), repo) || IsWorktreeOf(repo, repo) {
		t.Error("unrelated directory or the repository itself counted as a worktree")
	}
	roots := filepath.Join(repo, "wts")
	if !IsWorktreeOf(filepath.Join(roots, "run1", "job"), repo, roots) {
		t.Error("removed worktree under a caller's root not recognised by its path")
	}
	if IsWorktreeOf(filepath.Join(repo, "wts-other", "job"), repo, roots) || IsWorktreeOf(filepath.Join(roots, "run1", "job"), repo) {
		t.Error("worktree root matched by prefix, or without being given")
	}
}
