package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// TestSourceFollowsAGrowingLog reads a log another process is writing: a
// line without its newline yet waits, a line over the limit is read past,
// a line that is not an event is ignored.
func TestSourceFollowsAGrowingLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := func(e runner.Event) string {
		data, _ := json.Marshal(e)
		return string(data) + "\n"
	}
	st, src := NewState(), NewSource(path)
	src.tail.max = 200
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	started := line(runner.Event{Type: runner.EventJobStarted, Job: "a"})
	write(line(runner.Event{Type: runner.EventRunStarted, Jobs: 2}) + started[:10])
	if n, err := src.Read(st); n != 1 || err != nil || st.Total != 2 || len(st.Running) != 0 {
		t.Fatalf("first read: %d events, %v, %+v", n, err, st)
	}
	write(started[10:] + "not json\n" + line(runner.Event{Type: runner.EventJobStarted, Job: strings.Repeat("x", 300)}))
	write(line(runner.Event{Type: runner.EventJobStarted, Job: "b"}))
	if n, err := src.Read(st); n != 2 || err != nil {
		t.Fatalf("second read: %d events, %v", n, err)
	}
	if len(st.Running) != 2 || st.Running["a"] == nil || st.Running["b"] == nil {
		t.Errorf("running %v, want a and b (the long line read past)", st.Running)
	}
}

// FuzzStreamLines: any stream line renders without panicking, and every
// rendered line is one line.
func FuzzStreamLines(f *testing.F) {
	for _, s := range []string{
		`{"type":"system","subtype":"init","session_id":"s","model":"m"}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hi\nthere"},{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok","is_error":true}]}}`,
		`{"type":"result","subtype":"success","total_cost_usd":0.1,"num_turns":2,"errors":["x"]}`,
		`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":3,"retry_delay_ms":500,"error_status":529}`,
		`{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, l := range StreamLines(line, "/wt", nil) {
			if strings.Contains(l, "\n") {
				t.Fatalf("rendered line holds a newline: %q", l)
			}
		}
	})
}

// FuzzSource: any bytes in events.jsonl fold into a state and draw
// without panicking.
func FuzzSource(f *testing.F) {
	f.Add([]byte(`{"type":"run_started","jobs":2}` + "\n" + `{"type":"job_started","job":"a"}` + "\n" + `{"type":"tool_started","job":"a","tool":{"name":"Bash","input":"Bash: x"}}` + "\n"))
	f.Add([]byte(`{"type":"job_finished","job":"a","result":{"name":"a","status":"failed","error":"e"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st := NewState()
		if _, err := NewSource(path).Read(st); err != nil {
			t.Fatal(err)
		}
		for _, j := range st.Done {
			_ = FinishedLine(j, Style{Width: 40})
		}
		_ = st.RunningLines(t0, 5, Style{Width: 40})
		_ = st.Footer(t0, Style{Width: 40})
	})
}

// TestFromJournal shows a run of an earlier release (no events.jsonl) from
// its journal: finished jobs with their results, running ones, the budget.
func TestFromJournal(t *testing.T) {
	j := &runner.JournalData{RunID: "old", Status: runner.StateRunning, StartedAt: t0, Plan: &runner.Plan{BudgetUSD: 3},
		Jobs: []*runner.JobState{
			{Name: "done", State: runner.StateFinished, SpentUSD: 0.5, Result: &report.Job{Name: "done", Status: report.StatusFailed, Reason: report.ReasonTimeout}},
			{Name: "busy", State: runner.StateRunning, StartedAt: at(5), SpentUSD: 0.25},
			{Name: "later", State: runner.StatePending},
		}}
	st := FromJournal(j)
	if st.Total != 3 || len(st.Done) != 1 || st.Running["busy"] == nil || st.Ended || st.BudgetUSD != 3 || st.SpentUSD != 0.75 {
		t.Fatalf("state %+v", st)
	}
	if got := FinishedLine(st.Done[0], Style{}); !strings.Contains(got, "✗ done  failed (timeout)") {
		t.Errorf("finished line %q", got)
	}
	if got := st.RunningLines(at(65), 5, Style{})[0]; !strings.Contains(got, "busy") || !strings.Contains(got, "1m00s") {
		t.Errorf("running line %q", got)
	}
	j.Status = "failed"
	if !FromJournal(j).Ended {
		t.Error("a journal that is not running is an ended run")
	}
}

// TestResumedRunCountsOnce: a job interrupted, then started again by
// --resume in the same events.jsonl, is one job.
func TestResumedRunCountsOnce(t *testing.T) {
	st := NewState()
	for _, e := range []runner.Event{run(2), started("a", 0), started("b", 0),
		finished("a", 5, report.Job{Status: report.StatusSucceeded}), finished("b", 5, report.Job{Status: report.StatusInterrupted}),
		run(2), started("b", 10), finished("b", 20, report.Job{Status: report.StatusSucceeded})} {
		st.Apply(e)
	}
	if len(st.Done) != 2 || st.Done[1].Result.Status != report.StatusSucceeded {
		t.Errorf("done %d jobs, last %+v", len(st.Done), st.Done[len(st.Done)-1].Result)
	}
}
