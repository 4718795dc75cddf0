package runner

import (
	"fmt"
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

// TestJournalEncodeCache checks that run.json assembled from cached parts
// reads back as the journal it was, finished results and all.
func TestJournalEncodeCache(t *testing.T) {
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
}

// A resumed run continues the jobs an interrupt or fail-fast stopped, and
// keeps every other result.
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
		{"skipped for a usage limit", done(report.StatusSkipped, report.ReasonUsageLimit), StateFinished, true},
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
