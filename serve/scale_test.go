package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
)

// writeBigRun puts a finished run of n jobs in the state directory, as the
// runner leaves it: events.jsonl and report.json; every 100th job failed.
func writeBigRun(t *testing.T, cfg *Config, id string, n int) {
	t.Helper()
	rep := report.Report{Schema: report.Schema, RunID: id, Status: "failure", Jobs: make([]report.Job, n)}
	for i := range rep.Jobs {
		j := report.Job{Name: fmt.Sprintf("job-%05d", i), Position: i, Status: "succeeded", PermissionDenials: []report.PermissionDenial{}}
		if i%100 == 99 {
			j.Status, j.Error = "failed", "exit status 1"
		}
		rep.Jobs[i] = j
	}
	rep.Tally(false)
	path := runEventsPath(cfg, id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rep)
	os.WriteFile(path, []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644)
	if err := os.WriteFile(runLayout(cfg).Run(id).Report(), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A run of ten thousand jobs answers its snapshot in a few kilobytes
// (totals, the first failures, no job list), and its jobs page by page
// up to the last one, each page within its limit and size cap.
func TestRunOfTenThousandPages(t *testing.T) {
	b := newBed(t, nil)
	b.stop()
	writeBigRun(t, &b.cfg, "big", 10000)
	b2 := startBed(t, b.cfg)
	var body json.RawMessage
	b2.do("GET", "/api/runs/big", "", &body)
	var o runObject
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatalf("snapshot: %v: %.200s", err, body)
	}
	if len(body) > 64<<10 || o.Totals.Jobs != 10000 || o.Totals.Failed != 100 || o.FailuresTotal != 100 ||
		len(o.Failures) != maxListedFailures || o.Failures[0].Name != "job-00099" || o.Report == nil || len(o.Report.Jobs) != 0 {
		t.Fatalf("snapshot of %d bytes: totals %+v, %d failures of %d, report %v", len(body), o.Totals, len(o.Failures), o.FailuresTotal, o.Report != nil)
	}
	seen, pages := 0, 0
	for after := 0; ; pages++ {
		var p struct {
			Jobs []report.Job `json:"jobs"`
			Next *int         `json:"next"`
		}
		if r := b2.do("GET", fmt.Sprintf("/api/runs/big/jobs?after=%d&limit=%d", after, maxJobsPage), "", &p); r.StatusCode != 200 {
			t.Fatalf("page after %d: %d", after, r.StatusCode)
		}
		for _, j := range p.Jobs {
			if j.Position != seen {
				t.Fatalf("page after %d: job %s at %d, want position %d", after, j.Name, j.Position, seen)
			}
			seen++
		}
		if p.Next == nil {
			break
		}
		if len(p.Jobs) != maxJobsPage || *p.Next != seen {
			t.Fatalf("page after %d: %d jobs, next %d", after, len(p.Jobs), *p.Next)
		}
		after = *p.Next
	}
	if seen != 10000 || pages != 9 {
		t.Fatalf("paged %d jobs in %d pages", seen, pages+1)
	}
	for _, q := range []string{"after=-1", "limit=1001", "limit=x", "after=1e3"} {
		if r := b2.do("GET", "/api/runs/big/jobs?"+q, "", nil); r.StatusCode != http.StatusBadRequest {
			t.Errorf("jobs?%s: %d, want 400", q, r.StatusCode)
		}
	}
	var p struct{ Jobs []report.Job }
	if b2.do("GET", "/api/runs/big/jobs?after=20000", "", &p); len(p.Jobs) != 0 {
		t.Errorf("page past the end: %d jobs", len(p.Jobs))
	}
}

// A run without its report (lost, or still running) pages the jobs that
// finished from results.jsonl, leaving out a line still being written.
func TestRunJobsFromResults(t *testing.T) {
	b := newBed(t, nil)
	b.stop()
	path := runEventsPath(&b.cfg, "r1")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644)
	lines := `{"name":"b","status":"succeeded"}` + "\n" + `{"name":"a","status":"failed"}` + "\n" + `{"name":"c","sta`
	os.WriteFile(runLayout(&b.cfg).Run("r1").Results(), []byte(lines), 0o644)
	b2 := startBed(t, b.cfg)
	var p struct {
		Jobs []report.Job `json:"jobs"`
		Next *int         `json:"next"`
	}
	if b2.do("GET", "/api/runs/r1/jobs?limit=1", "", &p); len(p.Jobs) != 1 || p.Jobs[0].Name != "b" || p.Next == nil || *p.Next != 1 {
		t.Fatalf("first page: %+v next %v", p.Jobs, p.Next)
	}
	p.Next = nil
	if b2.do("GET", "/api/runs/r1/jobs?after=1", "", &p); len(p.Jobs) != 1 || p.Jobs[0].Name != "a" || p.Next != nil {
		t.Fatalf("second page: %+v next %v", p.Jobs, p.Next)
	}
}
