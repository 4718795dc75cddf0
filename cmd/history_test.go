package cmd

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/runner"
)

// historyTestdata is the hand-made projects tree of the history package.
var historyTestdata, _ = filepath.Abs(filepath.Join("..", "history", "testdata"))

func runHistory(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cache := t.TempDir() // the index of per-file summaries goes here, never to a real home
	getenv := func(k string) string {
		if k == "XDG_CACHE_HOME" {
			if v, ok := env[k]; ok {
				return v
			}
			return cache
		}
		return env[k]
	}
	io := &IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Getenv: getenv}
	code = Execute(context.Background(), io, append([]string{"history"}, args...))
	return out.String(), errOut.String(), code
}

func TestHistoryUsageJSON(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata, "HOME": "/nonexistent"}
	out, errOut, code := runHistory(t, env, "usage", "--by", "session", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Rows     []map[string]any `json:"rows"`
		Total    map[string]any   `json:"total"`
		Warnings []any            `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rows := doc.Rows
	if doc.Warnings == nil || len(doc.Warnings) != 0 || doc.Total["api_calls"] != 7.0 {
		t.Errorf("warnings %v, total %v; want [] and 7 calls", doc.Warnings, doc.Total)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3: %s", len(rows), out)
	}
	for _, k := range []string{"session_id", "input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd", "api_calls"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("row lacks %q: %v", k, rows[0])
		}
	}
	// The fork is charged for its own call only.
	for _, r := range rows {
		if r["session_id"] == "bbbbbbbb-2222-4222-8222-222222222222" && r["api_calls"] != 1.0 {
			t.Errorf("fork row %v", r)
		}
		// A cost that leaves out unpriced calls says so: never a silent 0.
		if _, unpriced := r["unpriced_calls"]; unpriced != (r["unpriced"] == true) {
			t.Errorf("row %v: unpriced calls without \"unpriced\": true, or the reverse", r)
		}
	}
	if doc.Total["unpriced"] != true || !strings.Contains(errOut, "1 API calls of models without a price (claude-mystery-9) are not in cost_usd") {
		t.Errorf("total %v; stderr %q: want unpriced and a warning naming the model", doc.Total, errOut)
	}

	out, _, code = runHistory(t, env, "usage", "--by", "day", "--utc", "--since", "2026-11-20", "--until", "2026-11-20", "--json")
	if code != 0 || !strings.Contains(out, `"date": "2026-11-20"`) || strings.Contains(out, "2026-11-19") || strings.Contains(out, "2026-11-21") {
		t.Errorf("by day with a one-day window: exit %d\n%s", code, out)
	}

	out, _, code = runHistory(t, env, "usage", "--by", "model")
	if code != 0 || !strings.Contains(out, "claude-mystery-9") || !strings.Contains(out, "without a price") {
		t.Errorf("table by model: exit %d\n%s", code, out)
	}
}

func TestHistoryUsageErrors(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata}
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"usage", "--by", "week"}, ExitUsage},
		{[]string{"usage", "--since", "yesterday-ish"}, ExitUsage},
		{[]string{"show", "zzzz"}, ExitFailed},
		{[]string{"show", ""}, ExitUsage}, // ambiguous: every session matches
		{[]string{"show", "aaaa", "--format", "pdf"}, ExitUsage},
		{[]string{"archive", "aaaa"}, ExitUsage}, // no destination
		{[]string{"usage", "--prices", "/nonexistent/prices.json"}, ExitFailed},
	}
	for _, tt := range tests {
		_, errOut, code := runHistory(t, env, tt.args...)
		if code != tt.code {
			t.Errorf("history %v: exit %d, want %d (%s)", tt.args, code, tt.code, errOut)
		}
	}
}

func TestHistoryList(t *testing.T) {
	env := map[string]string{"HOME": "/nonexistent"}
	out, errOut, code := runHistory(t, env, "list", "--config-dir", historyTestdata)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "SESSION") || !strings.Contains(out, "Please list the files.") {
		t.Errorf("list:\n%s", out)
	}
	if strings.Contains(out, "sk-ant-api03") || strings.Contains(out, "AKIAIOSFODNN7EXAMPLE") {
		t.Errorf("list shows a secret from a first prompt:\n%s", out)
	}
	out, _, code = runHistory(t, env, "list", "--config-dir", historyTestdata, "--project", "/srv/other", "--json")
	var list struct {
		Sessions []map[string]any `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Sessions) != 1 || list.Sessions[0]["session_id"] != "cccccccc-3333-4333-8333-333333333333" {
		t.Errorf("list --project: exit %d\n%s", code, out)
	}
	if flags, _ := list.Sessions[0]["flags"].([]any); !slices.Contains(flags, any("compacted")) {
		t.Errorf("compacted session not flagged: %v", list.Sessions[0])
	}
}

func TestHistoryShowToFile(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata}
	dst := filepath.Join(t.TempDir(), "s.html")
	_, errOut, code := runHistory(t, env, "show", "aaaa", "--format", "html", "-o", dst)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(dst)
	if err != nil || !bytes.HasPrefix(data, []byte("<!DOCTYPE html>")) || !bytes.Contains(data, []byte("<details class=\"sub\">")) {
		t.Errorf("html export: %v\n%.300s", err, data)
	}
}

func TestHistoryArchiveTarGz(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata}
	dst := filepath.Join(t.TempDir(), "out", "sessions.tar.gz")
	_, errOut, code := runHistory(t, env, "archive", "aaaa", "bbbb", "-o", dst)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{
		"projects/-home-me-proj/aaaaaaaa-1111-4111-8111-111111111111.jsonl",
		"projects/-home-me-proj/aaaaaaaa-1111-4111-8111-111111111111/subagents/agent-aab48416e4424e297.jsonl",
		"projects/-home-me-proj/aaaaaaaa-1111-4111-8111-111111111111/subagents/agent-aab48416e4424e297.meta.json",
		"projects/-home-me-proj/aaaaaaaa-1111-4111-8111-111111111111/tool-results/toolu_1.txt",
		"projects/-home-me-proj/bbbbbbbb-2222-4222-8222-222222222222.jsonl",
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Errorf("archive holds\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

func TestHistoryArchiveJSON(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata}
	dst := filepath.Join(t.TempDir(), "out")
	out, errOut, code := runHistory(t, env, "archive", "aaaa", "-o", dst, "--json")
	var res struct {
		Archived    int      `json:"archived"`
		Destination string   `json:"destination"`
		Sessions    []string `json:"sessions"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Archived != 1 || res.Destination != dst || len(res.Sessions) != 1 {
		t.Errorf("archive --json: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestHistoryEmptySessionHasNoZeroTime(t *testing.T) {
	cfg := t.TempDir()
	proj := filepath.Join(cfg, "projects", "-p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "e0000000-0000-4000-8000-000000000000.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "HOME": "/nonexistent"}
	for _, args := range [][]string{{"list", "--json"}, {"show", "e0", "--format", "json"}} {
		out, errOut, code := runHistory(t, env, args...)
		if code != 0 || strings.Contains(out, "0001-01-01") {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
	}
}

// TestHistoryCountsRemovedPneumaWorktrees: cmd tells history where the
// runner keeps its worktrees, so their sessions stay with the repository.
func TestHistoryCountsRemovedPneumaWorktrees(t *testing.T) {
	repo, cfg := t.TempDir(), t.TempDir()
	cwd := filepath.Join(runner.RepoLayout(repo).WorktreesRoot(), "run1", "job1") // gone already
	proj := filepath.Join(cfg, "projects", history.ProjectDirName(cwd))
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","cwd":"` + cwd + `","sessionId":"w1","uuid":"u1","timestamp":"2026-11-20T10:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	if err := os.WriteFile(filepath.Join(proj, "w1000000-0000-4000-8000-000000000000.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": cfg, "HOME": "/nonexistent"}
	for include, want := range map[bool]int{true: 1, false: 0} {
		args := []string{"list", "--project", repo, "--json"}
		if include {
			args = append(args, "--include-worktrees")
		}
		out, errOut, code := runHistory(t, env, args...)
		var list struct{ Sessions []any }
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Sessions) != want {
			t.Errorf("%v: exit %d, want %d sessions\n%s%s", args, code, want, out, errOut)
		}
	}
}

// `pneuma history SESSION` exports like show; anything that is neither a
// command nor a session is a usage error (exit 2), with a suggestion.
func TestHistoryBareSessionAndStrayArgs(t *testing.T) {
	env := map[string]string{"CLAUDE_CONFIG_DIR": historyTestdata}
	showOut, _, code := runHistory(t, env, "show", "aaaa", "--format", "json")
	bareOut, _, bareCode := runHistory(t, env, "aaaa", "--format", "json")
	if code != 0 || bareOut != showOut || bareCode != code || !strings.Contains(bareOut, "pneuma.history.session/v1") {
		t.Errorf("pneuma history SESSION (exit %d) differs from history show SESSION (exit %d)", bareCode, code)
	}
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"lst"}, `did you mean list?`},
		{[]string{"a", "b"}, "takes one session"},
		{[]string{"not-a-session!"}, "neither a command"},
	}
	for _, tt := range tests {
		if _, errOut, code := runHistory(t, env, tt.args...); code != ExitUsage || !strings.Contains(errOut, tt.wantErr) {
			t.Errorf("%v: exit %d (%s), want %d with %q", tt.args, code, errOut, ExitUsage, tt.wantErr)
		}
	}
}
