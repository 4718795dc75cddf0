package cmd_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// writeEvents writes a run's events.jsonl as the recorder would (seqs
// from 1).
func writeEvents(t *testing.T, dir string, evs ...runner.Event) {
	t.Helper()
	var b strings.Builder
	for i, e := range evs {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(`{"seq":` + itoa(i+1) + "," + string(data[1:]) + "\n")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStatusFindsRuns: a server's run by id under --state-dir; the latest
// run of the repository without an id; a run of an earlier release from
// its journal alone; a bad id is a usage error that names where it looked.
func TestStatusFindsRuns(t *testing.T) {
	repo := claudetest.GitRepo(t)
	now := time.Now()
	state := t.TempDir()
	writeEvents(t, filepath.Join(state, "runs", "20261127-010000-serv"),
		runner.Event{Type: runner.EventRunStarted, RunID: "20261127-010000-serv", Jobs: 2, Time: now},
		runner.Event{Type: runner.EventJobStarted, Job: "lint", Time: now},
		runner.Event{Type: runner.EventJobFinished, Job: "lint", Time: now, Result: &report.Job{Name: "lint", Status: report.StatusSucceeded, NumTurns: 2}})
	got := run(t, repo, nil, "status", "--state-dir", state, "20261127-010000-serv")
	if got.code != 0 || !strings.Contains(got.stdout, "✓ lint  succeeded") || !strings.Contains(got.stdout, "1/2 done") {
		t.Errorf("server run: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}

	runs := filepath.Join(repo, ".pneuma", "runs")
	old := filepath.Join(runs, "20261126-090000-old1")
	j := runner.JournalData{Schema: runner.JournalSchema, RunID: "20261126-090000-old1", Status: "failed", StartedAt: now, UpdatedAt: now,
		Plan: &runner.Plan{RunID: "20261126-090000-old1"},
		Jobs: []*runner.JobState{{Name: "build", State: runner.StateFinished, Result: &report.Job{Name: "build", Status: report.StatusFailed, Reason: report.ReasonTimeout}}}}
	data, _ := json.Marshal(j)
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "run.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeEvents(t, filepath.Join(runs, "20261127-100000-new1"),
		runner.Event{Type: runner.EventRunStarted, RunID: "20261127-100000-new1", Jobs: 1, Time: now},
		runner.Event{Type: runner.EventJobStarted, Job: "docs", Time: now},
		runner.Event{Type: runner.EventToolStarted, Job: "docs", Time: now, Tool: &runner.ToolCall{Name: "Edit", ToolUseID: "1", Input: "Edit: README.md"}})
	got = run(t, repo, nil, "status")
	if !strings.Contains(got.stdout, "run 20261127-100000-new1") || !strings.Contains(got.stdout, "Edit: README.md") {
		t.Errorf("latest run: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	got = run(t, repo, nil, "status", "20261126-090000-old1")
	if !strings.Contains(got.stdout, "✗ build  failed (timeout)") || !strings.Contains(got.stdout, "failed") {
		t.Errorf("older run from its journal: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
	for _, bad := range []string{"nope", "../etc"} {
		got = run(t, repo, nil, "status", bad)
		if got.code != 2 || got.stderr == "" {
			t.Errorf("status %s: exit %d, stderr %q", bad, got.code, got.stderr)
		}
	}
}

// TestLogsRendersAndRaw: every job's stream prefixed with its name; one
// job's alone; --raw as written.
func TestLogsRendersAndRaw(t *testing.T) {
	repo := claudetest.GitRepo(t)
	dir := filepath.Join(repo, ".pneuma", "runs", "20261127-110000-logs")
	writeEvents(t, dir, runner.Event{Type: runner.EventRunStarted, Jobs: 2})
	stream := `{"type":"system","subtype":"init","session_id":"s1","model":"m","claude_code_version":"2.1.197"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok  pkg 0.1s"}]}}
{"type":"result","subtype":"success","total_cost_usd":0.0123,"num_turns":2,"duration_ms":4000}
`
	for _, job := range []string{"a", "b"} {
		jd := filepath.Join(dir, "jobs", job)
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jd, "stream.jsonl"), []byte(stream), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Job b's audit says how pneuma decided its call; a's has none.
	audit := `{"time":"2026-11-27T11:00:01Z","tool":"Bash","tool_use_id":"t1","input":"go test ./...","decision":"allow","rule":"Bash(go test *)","via":"hook","ok":true}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "jobs", "b", "audit.jsonl"), []byte(audit), 0o644); err != nil {
		t.Fatal(err)
	}
	got := run(t, repo, nil, "logs", "20261127-110000-logs")
	for _, want := range []string{"a | ── session s1", "b | → Bash: go test ./...", "a |   ← ok pkg 0.1s",
		"b |   ← [allow: Bash(go test *)] ok pkg 0.1s", "b | ✓ result · $0.0123 · 2 turns · 4s", "a | Looking."} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("logs lacks %q:\n%s%s", want, got.stdout, got.stderr)
		}
	}
	got = run(t, repo, nil, "logs", "20261127-110000-logs", "b", "--raw")
	if got.stdout != stream {
		t.Errorf("--raw is not the stream as written:\n%s", got.stdout)
	}
	if got = run(t, repo, nil, "logs", "20261127-110000-logs", "zzz"); got.code != 2 {
		t.Errorf("unknown job: exit %d", got.code)
	}
}
