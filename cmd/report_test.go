package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/report"
)

// execReport runs pneuma with args and the given environment and returns
// the exit code, stdout and stderr.
func execReport(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	io := &IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, Getenv: func(k string) string { return env[k] }}
	code := Execute(context.Background(), io, args)
	return code, out.String(), errOut.String()
}

// writeShard writes the report of shard i of n holding the named jobs.
func writeShard(t *testing.T, dir string, i, n int, names ...string) string {
	t.Helper()
	start := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	r := &report.Report{Schema: report.Schema, RunID: "run1", StartedAt: start, FinishedAt: start.Add(time.Duration(i) * time.Minute),
		Shard: &report.Shard{Index: i, Total: n}}
	for _, name := range names {
		j := report.Job{Name: name, Status: report.StatusSucceeded, CostUSD: 0.01, DurationMS: 1000, Repo: "/r", Base: "main"}
		if strings.HasPrefix(name, "bad") {
			j.Status, j.Reason, j.Error = report.StatusFailed, report.ReasonVerifyFailed, "tests failed\n::error::injected"
		}
		r.Jobs = append(r.Jobs, j)
	}
	r.Tally(false)
	path := filepath.Join(dir, "shard-"+string(rune('0'+i))+".json")
	if err := report.WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportMerge(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, 1, 3, "a", "bad-b")
	b := writeShard(t, dir, 3, 3, "c")
	out := filepath.Join(dir, "merged.json")
	junit := filepath.Join(dir, "junit.xml")
	step := filepath.Join(dir, "step_summary.md")
	if err := os.WriteFile(step, []byte("earlier step output\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execReport(t, map[string]string{"GITHUB_STEP_SUMMARY": step},
		"report", "merge", b, a, "-o", out, "--junit", junit, "--summary", step)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Validate(data); err != nil {
		t.Fatalf("merged report does not validate: %v", err)
	}
	merged, err := report.ReadJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Totals.Jobs != 3 || merged.Totals.Failed != 1 || merged.Status != report.RunFailed || len(merged.Merged) != 2 {
		t.Errorf("merged totals %+v status %s parts %d", merged.Totals, merged.Status, len(merged.Merged))
	}
	if !strings.Contains(stderr, "no report from shard 2/3") || !strings.Contains(stderr, "merged 2 reports (3 jobs)") {
		t.Errorf("stderr lacks the missing-shard warning or the summary line:\n%s", stderr)
	}
	if !strings.Contains(stdout, "TOTAL (3 jobs)") {
		t.Errorf("no table on stdout:\n%s", stdout)
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), `<testsuite name="pneuma run run1" tests="3" failures="1"`) {
		t.Errorf("junit: %v\n%s", err, x)
	}
	summary, err := os.ReadFile(step)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(summary), "earlier step output\n\n### ❌ pneuma run `run1`: failed") || !strings.Contains(string(summary), "No report from shard 2/3") {
		t.Errorf("step summary not appended:\n%s", summary)
	}
}

func TestReportMergeToStdout(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, 1, 2, "a")
	b := writeShard(t, dir, 2, 2, "b")
	code, stdout, stderr := execReport(t, nil, "report", "merge", a, b, "-o", "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if err := report.Validate([]byte(stdout)); err != nil {
		t.Errorf("stdout is not just the merged report: %v\n%s", err, stdout)
	}
}

func TestReportMergeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeShard(t, dir, 1, 2, "a", "b")
	b := writeShard(t, dir, 2, 2, "b", "c")
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte(`{"schema":"pneuma.report/v9"}`), 0o644)
	out := filepath.Join(dir, "out.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"overlap", []string{a, b, "-o", out}, `job "b" is in ` + a + ", " + b},
		{"same file twice", []string{a, a, "-o", out}, "both shard 1/2"},
		{"missing file", []string{filepath.Join(dir, "nope.json"), "-o", out}, "no such file"},
		{"other version", []string{garbage, "-o", out}, `unsupported report schema "pneuma.report/v9"`},
		{"no output", []string{a}, "merge needs -o FILE"},
		{"no inputs", []string{"-o", out}, "at least one report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := execReport(t, nil, append([]string{"report", "merge"}, tt.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an output was written despite the error")
			}
		})
	}
}

func TestReportValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeShard(t, dir, 1, 2, "a")
	bad := filepath.Join(dir, "bad.json")
	data, _ := os.ReadFile(good)
	os.WriteFile(bad, []byte(strings.Replace(string(data), `"run_id"`, `"runid"`, 1)), 0o644)

	code, stdout, stderr := execReport(t, nil, "report", "validate", good)
	if code != ExitOK || !strings.Contains(stdout, good+": valid") {
		t.Errorf("valid file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = execReport(t, nil, "report", "validate", good, bad, filepath.Join(dir, "missing.json"))
	if code != ExitFailed || !strings.Contains(stdout, good+": valid") || !strings.Contains(stderr, bad+": invalid report") ||
		!strings.Contains(stderr, "missing.json: open") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestReportShow(t *testing.T) {
	dir := t.TempDir()
	path := writeShard(t, dir, 1, 1, "a", "bad-b")
	for _, tt := range []struct {
		format, want string
	}{
		{"table", "TOTAL (2 jobs)"},
		{"markdown", "| Job | Status |"},
		{"junit", `<testcase name="bad-b"`},
		{"json", `"schema": "pneuma.report/v1"`},
	} {
		code, stdout, stderr := execReport(t, nil, "report", "show", "--format", tt.format, path)
		if code != ExitOK || !strings.Contains(stdout, tt.want) {
			t.Errorf("--format %s: exit %d, stdout:\n%s\nstderr: %s", tt.format, code, stdout, stderr)
		}
	}
	code, _, stderr := execReport(t, nil, "report", "show", "--format", "html", path)
	if code != ExitUsage || !strings.Contains(stderr, `unknown --format "html"`) {
		t.Errorf("unknown format: exit %d, %s", code, stderr)
	}
	// In GitHub Actions the table is fenced off from workflow commands.
	code, stdout, _ := execReport(t, map[string]string{"GITHUB_ACTIONS": "true"}, "report", "show", path)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != ExitOK || !strings.HasPrefix(lines[0], "::stop-commands::pneuma-") ||
		lines[len(lines)-1] != "::"+strings.TrimPrefix(lines[0], "::stop-commands::")+"::" {
		t.Errorf("table not wrapped in stop-commands:\n%s", stdout)
	}
}
