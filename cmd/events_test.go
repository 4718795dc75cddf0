package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// TestRecorderContinuesAndSurvivesDamage: a resumed run continues the seqs
// of its events.jsonl; a damaged log is kept aside and a new one begins
// (the run is never refused for its log).
func TestRecorderContinuesAndSurvivesDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "events.jsonl")
	var warn bytes.Buffer
	for i := range 2 {
		rec, err := openRecorder(path, &warn)
		if err != nil {
			t.Fatal(err)
		}
		rec.Event(runner.Event{Type: runner.EventRunStarted, Jobs: 1})
		rec.Close(&warn)
		data, _ := os.ReadFile(path)
		if want := `{"seq":` + string(rune('1'+i)); !strings.Contains(string(data), want) {
			t.Errorf("open %d: log %q lacks %s", i+1, data, want)
		}
	}
	if err := os.WriteFile(path, []byte("{\"seq\":1,\"type\":\"x\"}\nnot an event\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecorder(path, &warn)
	if err != nil {
		t.Fatalf("a damaged log refused the run: %v", err)
	}
	rec.Event(runner.Event{Type: runner.EventRunStarted, Jobs: 1})
	rec.Close(&warn)
	if _, err := os.Stat(path + ".damaged"); err != nil || !strings.Contains(warn.String(), "damaged") {
		t.Errorf("the damaged log is not kept aside with a warning: %v, %q", err, warn.String())
	}
}

// TestRecorderLogsTheReportHead: run_finished goes to events.jsonl with
// the report's totals and status but not its jobs (they are in
// report.json; a run of 10,000 jobs made it one 10 MB line), while the
// observers after the log still get every job.
func TestRecorderLogsTheReportHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "events.jsonl")
	var seen int
	next := reporterFunc(func(e runner.Event) {
		_ = e.Report.EachJob(func(*report.Job) error { seen++; return nil })
	})
	rec, err := openRecorder(path, &bytes.Buffer{}, next)
	if err != nil {
		t.Fatal(err)
	}
	rep := &report.Report{Schema: report.Schema, RunID: "r", Status: report.RunSucceeded, Totals: report.Totals{Jobs: 2, Succeeded: 2},
		Jobs: []report.Job{{Name: "first-job", Status: report.StatusSucceeded}, {Name: "second-job", Status: report.StatusSucceeded}}}
	rec.Event(runner.Event{Type: runner.EventRunFinished, RunID: "r", Report: rep})
	rec.Close(&bytes.Buffer{})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line := string(data)
	if strings.Contains(line, "first-job") || !strings.Contains(line, `"status":"succeeded"`) || !strings.Contains(line, `"jobs":[]`) {
		t.Errorf("run_finished logged as %s, want the report's head without its jobs", line)
	}
	if seen != 2 {
		t.Errorf("the observer after the log saw %d jobs, want 2", seen)
	}
}

type reporterFunc func(runner.Event)

func (f reporterFunc) Event(e runner.Event) { f(e) }
