//go:build unix

package history

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileTree writes one good session (with a good subagent and a directory
// named like a subagent) next to the usual accidents: a named pipe, a
// symlink loop and a directory named like transcripts, a link to the good
// transcript, and a second link to the project directory.
func hostileTree(t *testing.T) (cfg, good string) {
	t.Helper()
	cfg, good, _ = writePartialTree(t)
	proj := filepath.Dir(good)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(syscall.Mkfifo(filepath.Join(proj, "fifo.jsonl"), 0o644))
	must(os.Symlink("loop.jsonl", filepath.Join(proj, "loop.jsonl")))
	must(os.Mkdir(filepath.Join(proj, "dir.jsonl"), 0o755))
	subs := filepath.Join(SessionDir(good), "subagents")
	must(os.MkdirAll(filepath.Join(subs, "agent-x.jsonl"), 0o755))
	must(syscall.Mkfifo(filepath.Join(subs, "agent-p.jsonl"), 0o644))
	must(os.WriteFile(filepath.Join(subs, "agent-a1.jsonl"), []byte(
		`{"type":"user","isSidechain":true,"agentId":"a1","sessionId":"s1","uuid":"sa1","timestamp":"2026-11-20T10:00:01Z","message":{"role":"user","content":"look"}}`+"\n"+
			`{"type":"assistant","isSidechain":true,"agentId":"a1","sessionId":"s1","uuid":"sa2","timestamp":"2026-11-20T10:00:02Z","requestId":"req_s","message":{"id":"msg_s","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"seen"}],"usage":{"input_tokens":1,"output_tokens":9}}}`+"\n"), 0o644))
	// A meta file that is a named pipe must not block either.
	must(syscall.Mkfifo(filepath.Join(subs, "agent-a1.meta.json"), 0o644))
	must(os.Symlink(proj, filepath.Join(cfg, "projects", "again")))
	must(os.Symlink("projects", filepath.Join(cfg, "projects", "loopdir")))
	return cfg, good
}

func TestHostileTreeIsReadAroundItsAccidents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg, good := hostileTree(t)

	c, err := Scan(ctx, cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	ids := map[string]bool{}
	for _, s := range c.Sessions() {
		ids[s.ID] = true
		if s.ID == "s1" && (s.Subagents != 1 || s.OutputTokens != 270+9) {
			t.Errorf("good session s1: %d subagents, output %d; want 1 and %d", s.Subagents, s.OutputTokens, 270+9)
		}
	}
	if len(ids) != 2 || !ids["s1"] || !ids["s2"] {
		t.Errorf("sessions %v, want s1 and s2 once each (the linked project directory is the same one)", ids)
	}
	want := map[string]string{
		"fifo.jsonl":    "named pipe",
		"loop.jsonl":    "too many levels of symbolic links",
		"dir.jsonl":     "directory",
		"agent-x.jsonl": "directory",
		"agent-p.jsonl": "named pipe",
	}
	got := map[string]string{}
	for _, w := range c.Warnings {
		got[filepath.Base(w.Path)] = w.Problem
	}
	for name, problem := range want {
		if !strings.Contains(got[name], problem) {
			t.Errorf("warning for %s = %q, want it to say %q (all: %v)", name, got[name], problem, c.Warnings)
		}
	}
	if len(c.Warnings) != len(want) || c.FilesRead != 3 {
		t.Errorf("%d warnings, %d files read; want %d and 3: %v", len(c.Warnings), c.FilesRead, len(want), c.Warnings)
	}

	// show of the good session skips the broken subagent files with a warning.
	var buf bytes.Buffer
	var warned []Warning
	err = Export(ctx, &buf, good, ExportOptions{Format: FormatMarkdown, Warn: func(w Warning) { warned = append(warned, w) }})
	if err != nil || !strings.Contains(buf.String(), "seen") || len(warned) != 2 {
		t.Errorf("export of the good session: %v, warnings %v\n%s", err, warned, buf.String())
	}

	// show of a bad one: a clear error at once, whichever way it is named.
	for _, q := range []string{"fifo", "loop", "dir", filepath.Join(filepath.Dir(good), "fifo.jsonl")} {
		_, err := Resolve(ctx, cfg, q)
		var u *UnreadableError
		if !errors.As(err, &u) {
			t.Errorf("Resolve(%q) = %v, want an UnreadableError", q, err)
		}
	}
	err = Export(ctx, &buf, filepath.Join(filepath.Dir(good), "fifo.jsonl"), ExportOptions{})
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("Export(fifo) = %v, want ErrNotRegular", err)
	}
	if _, err := TranscriptUsage(ctx, filepath.Join(filepath.Dir(good), "loop.jsonl"), nil); err == nil {
		t.Error("TranscriptUsage of a symlink loop: no error")
	}
}

func TestPermissionDeniedIsAWarning(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: a mode-000 file is still readable; TestHostileTreeIsReadAroundItsAccidents covers unreadable files with a directory named *.jsonl")
	}
	cfg, good, _ := writePartialTree(t)
	locked := filepath.Join(filepath.Dir(good), "locked.jsonl")
	if err := os.WriteFile(locked, []byte("{}\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	c, err := Scan(context.Background(), cfg, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0].Problem, "permission denied") {
		t.Errorf("warnings = %v", c.Warnings)
	}
}
