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
