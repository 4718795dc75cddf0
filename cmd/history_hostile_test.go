//go:build unix

package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHistoryAroundUnreadableFiles(t *testing.T) {
	cfg := t.TempDir()
	proj := filepath.Join(cfg, "projects", "-p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(proj, "x.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "HOME": "/nonexistent"}

	// Nothing readable at all: the command fails, saying why.
	for _, cmd := range []string{"list", "usage"} {
		_, errOut, code := runHistory(t, env, cmd)
		if code != ExitEnvironment || !strings.Contains(errOut, "x.jsonl") || !strings.Contains(errOut, "named pipe") {
			t.Errorf("%s over a lone named pipe: exit %d, want %d\n%s", cmd, code, ExitEnvironment, errOut)
		}
	}

	// With one good session the pipe is a warning, the exit code 0.
	good, err := os.ReadFile(filepath.Join(historyTestdata, "projects", "-srv-other", "cccccccc-3333-4333-8333-333333333333.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "cccccccc-3333-4333-8333-333333333333.jsonl"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runHistory(t, env, "list")
	if code != 0 || !strings.Contains(out, "cccccccc") || !strings.Contains(errOut, "warning: skipped") {
		t.Errorf("list: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runHistory(t, env, "usage", "--json")
	var doc struct {
		Rows     []map[string]any `json:"rows"`
		Warnings []struct{ Path, Problem string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Rows) == 0 || len(doc.Warnings) != 1 ||
		!strings.HasSuffix(doc.Warnings[0].Path, "x.jsonl") {
		t.Errorf("usage --json: exit %d\n%s", code, out)
	}
	_, errOut, code = runHistory(t, env, "show", "x")
	if code != ExitEnvironment || !strings.Contains(errOut, "named pipe") {
		t.Errorf("show of the pipe: exit %d, want %d\n%s", code, ExitEnvironment, errOut)
	}
}

func TestHistoryHasItsOwnStopNotice(t *testing.T) {
	var buf syncBuffer
	ctx, stop := signalContext(context.Background(), &buf)
	defer stop()
	setStopNotice(ctx, "stopping history now", "stopping history now")
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	if got := buf.String(); !strings.Contains(got, "stopping history now") || strings.Contains(got, "jobs") {
		t.Errorf("notice = %q", got)
	}
	err := historyErr(ctx, ctx.Err())
	if ExitCode(err) != ExitInterrupted {
		t.Errorf("exit code after a signal = %d, want %d", ExitCode(err), ExitInterrupted)
	}
}
