package runner

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
)

// TestJournalSyncGroupCommit finishes many jobs at once: every sync
// returns with its change on disk, whether its own save or another's
// covered it.
func TestJournalSyncGroupCommit(t *testing.T) {
	p := &Plan{RunID: "r", RunDir: t.TempDir()}
	const n = 64
	for i := range n {
		p.Jobs = append(p.Jobs, &Job{Name: fmt.Sprintf("job-%d", i)})
	}
	j, err := openJournal(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, job := range p.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.update(job.Name, func(s *JobState) { s.State = StateFinished })
			if err := j.sync(); err != nil {
				t.Error(err)
				return
			}
			// What sync returned for is on disk.
			got, err := ReadJournal(p.RunDir)
			if err != nil {
				t.Error(err)
				return
			}
			for _, s := range got.Jobs {
				if s.Name == job.Name && s.State != StateFinished {
					t.Errorf("%s is %s on disk after its sync", job.Name, s.State)
				}
			}
		}()
	}
	wg.Wait()
	// A sync with nothing newer than the last save still saves its own call.
	before := j.saved
	if err := j.sync(); err != nil || j.saved != before+1 {
		t.Errorf("sync after the burst: saved %d -> %d, %v", before, j.saved, err)
	}
}

// TestJournalLogReplay checks that the states appended to journal.jsonl
// read back onto run.json, the last one of a job winning, across rounds
// and a resume (which writes run.json afresh and empties the log).
func TestJournalLogReplay(t *testing.T) {
	p := &Plan{RunID: "r", RunDir: t.TempDir(), Jobs: []*Job{{Name: "a", Prompts: []string{"x"}}, {Name: "b"}}}
	j, err := openJournal(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round, status := range []string{"succeeded", "failed"} {
		j.update("a", func(s *JobState) {
			s.State, s.Result = StateFinished, &report.Job{Name: "a", Status: status}
		})
		j.update("b", func(s *JobState) { s.State, s.Attempt = StateRunning, round+1 })
		if err := j.sync(); err != nil {
			t.Fatal(err)
		}
		got, err := ReadJournal(p.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		a, b := got.Jobs[0], got.Jobs[1]
		if got.RunID != "r" || len(got.Plan.Jobs) != 2 || got.Plan.Jobs[0].Prompts[0] != "x" ||
			a.Result == nil || a.Result.Status != status || b.Attempt != round+1 {
			t.Errorf("round %d: read back %+v, a %+v, b %+v", round, got.JournalData, a, b)
		}
	}
	j.startWriter()
	j.stopWriter()
	prior, err := ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	// A resume: run.json gets the replayed states, the log starts empty.
	j2, err := openJournal(p, prior)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(RunDir(p.RunDir).JournalLog()); err != nil || len(data) != 0 {
		t.Errorf("log after resume: %q, %v", data, err)
	}
	got, err := ReadJournal(p.RunDir)
	if err != nil || got.Jobs[0].Result.Status != "failed" || got.Jobs[1].Attempt != 2 {
		t.Fatalf("after resume: %+v %+v, %v", got.Jobs[0], got.Jobs[1], err)
	}
	// The end of a run: run.json whole, no log left.
	j2.startWriter()
	if err := j2.save(); err != nil {
		t.Fatal(err)
	}
	j2.stopWriter()
	if _, err := os.Stat(RunDir(p.RunDir).JournalLog()); !os.IsNotExist(err) {
		t.Errorf("log after the run's last save: %v", err)
	}
}

// TestJournalLogDamage: a last line cut short by a crash is left out; a
// damaged line before it is an error that names the file and line.
func TestJournalLogDamage(t *testing.T) {
	p := &Plan{RunID: "r", RunDir: t.TempDir(), Jobs: []*Job{{Name: "a"}}}
	if _, err := openJournal(p, nil); err != nil {
		t.Fatal(err)
	}
	log := RunDir(p.RunDir).JournalLog()
	for _, tc := range []struct{ log, wantState, wantErr string }{
		{`{"name":"a","state":"running"}` + "\n" + `{"name":"a","sta`, StateRunning, ""},
		{`{"name":"a","state":"running"}` + "\n" + `{"name":"a","state":"finished"}` + "\n", StateFinished, ""},
		{"garbage\n" + `{"name":"a","state":"running"}` + "\n", "", "journal.jsonl:1: not a job state"},
	} {
		if err := os.WriteFile(log, []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadJournal(p.RunDir)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want %q", tc.log, err, tc.wantErr)
			}
		case err != nil || got.Jobs[0].State != tc.wantState:
			t.Errorf("%q: %+v, %v; want state %s", tc.log, got, err, tc.wantState)
		}
	}
}

// A resumed run continues the jobs an interrupt, fail-fast or a usage
// limit stopped, and keeps every other result.
func TestReopen(t *testing.T) {
	done := func(status, reason string) *JobState {
		return &JobState{Name: "j", State: StateFinished, SessionID: "sid", WorktreeCreated: true,
			Result: &report.Job{Status: status, Reason: reason}}
	}
	tests := []struct {
		name  string
		s     *JobState
		state string
		kept  bool // the result stays
	}{
		{"pending", &JobState{State: StatePending}, StatePending, false},
		{"running (pneuma was killed)", &JobState{State: StateRunning}, StateRunning, false},
		{"succeeded", done(report.StatusSucceeded, ""), StateFinished, true},
		{"failed", done(report.StatusFailed, report.ReasonAPIError), StateFinished, true},
		{"skipped for the budget", done(report.StatusSkipped, report.ReasonBudget), StateFinished, true},
		{"skipped for a usage limit", done(report.StatusSkipped, report.ReasonUsageLimit), StatePending, false},
		{"failed on a usage limit", done(report.StatusFailed, report.ReasonUsageLimit), StateRunning, false},
		{"failed at max_budget", done(report.StatusFailed, report.ReasonMaxBudget), StateFinished, true},
		{"interrupted", done(report.StatusInterrupted, report.ReasonInterrupted), StateRunning, false},
		{"interrupted by fail-fast", done(report.StatusInterrupted, report.ReasonFailFast), StateRunning, false},
		{"skipped by an interrupt", done(report.StatusSkipped, report.ReasonInterrupted), StatePending, false},
		{"skipped by fail-fast", done(report.StatusSkipped, report.ReasonFailFast), StatePending, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was := *tt.s
			got := reopen(tt.s)
			if got.State != tt.state || (got.Result != nil) != tt.kept || got.SessionID != was.SessionID {
				t.Errorf("reopen = %+v", got)
			}
			if tt.s.State != was.State || tt.s.Result != was.Result {
				t.Errorf("reopen changed the prior journal's state: %+v", tt.s)
			}
		})
	}
}

// TestResumeOfAKilledRunAppends: --resume of a killed run goes on
// appending to its log after the last whole line instead of writing
// run.json again, finished results go to the store as they were read,
// and a second kill replays to what a second resume needs.
func TestResumeOfAKilledRunAppends(t *testing.T) {
	p := &Plan{RunID: "r", RunDir: t.TempDir(), Jobs: []*Job{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	j, err := openJournal(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	j.update("a", func(s *JobState) {
		s.State, s.Result = StateFinished, &report.Job{Name: "a", Status: report.StatusSucceeded, CostUSD: 0.5, Result: "done"}
	})
	j.update("b", func(s *JobState) { s.State, s.Attempt = StateRunning, 1 })
	j.update("c", func(s *JobState) {
		s.State, s.Result = StateFinished, &report.Job{Name: "c", Status: report.StatusInterrupted, Reason: report.ReasonInterrupted}
	})
	if err := j.sync(); err != nil {
		t.Fatal(err)
	}
	j.startWriter()
	j.stopWriter() // killed: no final save
	logPath := RunDir(p.RunDir).JournalLog()
	whole, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	torn, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := torn.WriteString(`{"name":"b","state":"fini`); err != nil { // the kill cut this write
		t.Fatal(err)
	}
	torn.Close()
	runJSON, err := os.ReadFile(JournalPath(p.RunDir))
	if err != nil {
		t.Fatal(err)
	}

	prior, err := readJournal(p.RunDir, true)
	if err != nil {
		t.Fatal(err)
	}
	j2, err := openJournal(prior.Plan, prior)
	if err != nil {
		t.Fatal(err)
	}
	if now, err := os.ReadFile(JournalPath(p.RunDir)); err != nil || !bytes.Equal(now, runJSON) {
		t.Errorf("resume wrote run.json again (%v)", err)
	}
	if data, err := os.ReadFile(logPath); err != nil || !bytes.Equal(data, whole) {
		t.Errorf("log on resume = %q (%v), want its whole lines %q", data, err, whole)
	}
	if st := j2.state("c"); st.State != StateRunning || st.Done() {
		t.Errorf("interrupted job c is not reopened: %+v", st)
	}
	totals, err := j2.storeResults(RunDir(p.RunDir).Results())
	if err != nil {
		t.Fatal(err)
	}
	defer j2.closeResults()
	if totals.Jobs != 1 || totals.Succeeded != 1 || totals.CostUSD != 0.5 {
		t.Errorf("carried totals = %+v, want job a's", totals)
	}
	if res, err := j2.result(0); err != nil || res == nil || res.Name != "a" || res.Result != "done" {
		t.Errorf("job a's stored result = %+v, %v", res, err)
	}

	j2.update("b", func(s *JobState) {
		s.State, s.Result = StateFinished, &report.Job{Name: "b", Status: report.StatusFailed}
	})
	if err := j2.sync(); err != nil {
		t.Fatal(err)
	}
	j2.startWriter()
	j2.stopWriter() // killed again
	again, err := ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := again.Jobs[0], again.Jobs[1], again.Jobs[2]
	if a.Result == nil || a.Result.Result != "done" || b.Result == nil || b.Result.Status != report.StatusFailed ||
		c.State != StateRunning || c.Result != nil {
		t.Errorf("after a second kill: a %+v, b %+v, c %+v", a, b, c)
	}
}
