package web_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pneuma-cli/pneuma/internal/testbed/browser"
	"github.com/pneuma-cli/pneuma/report"
)

// writeBigRun puts a finished run of n jobs in the state directory as the
// runner leaves it (events.jsonl, report.json); every 100th job failed.
func writeBigRun(t *testing.T, state, id string, n int) {
	t.Helper()
	rep := report.Report{Schema: report.Schema, RunID: id, Status: "failure", Jobs: make([]report.Job, n)}
	for i := range rep.Jobs {
		rep.Jobs[i] = report.Job{Name: fmt.Sprintf("job-%05d", i), Position: i, Status: "succeeded", CostUSD: 0.01}
		if i%100 == 99 {
			rep.Jobs[i].Status, rep.Jobs[i].Error = "failed", "exit status 1"
		}
	}
	rep.Tally(false)
	dir := filepath.Join(state, "runs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rep)
	if err := os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The run page of a run of ten thousand jobs shows its totals and failures
// at once, one page of the job table (the DOM stays bounded), and reaches
// the last job, whose own page finds its report entry; the load times are
// logged as benchmark figures.
func TestConsoleRunOfTenThousand(t *testing.T) {
	srv := startReal(t)
	srv.stop()
	writeBigRun(t, srv.state, "big", 10000)
	srv.Restart(0)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	start := time.Now()
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/runs/big'`))
	p.wait(`document.querySelectorAll('#jobs tbody tr').length === 100 && document.querySelectorAll('#failures li').length === 100 &&
		document.querySelector('#total-cost')?.textContent !== ''`, "the first page, the failures and the totals")
	t.Logf("benchmark: console run page of 10,000 jobs: totals, 100 failures and the first page in %v", time.Since(start))
	if got := eval[string](p, `document.querySelector('#failures h2').textContent`); got != "Failed jobs (100)" {
		t.Errorf("failures heading %q", got)
	}
	if n := eval[int](p, `document.getElementsByTagName('*').length`); n > 5000 {
		t.Errorf("the run page has %d elements for 10,000 jobs: not bounded", n)
	}
	start = time.Now()
	p.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.pager button')].find((b) => b.textContent === 'Last').click()`))
	p.wait(`document.querySelector('#jobs tr[data-job="job-09999"]') !== null && document.querySelectorAll('#jobs tbody tr').length === 100`, "the last page")
	t.Logf("benchmark: console run page of 10,000 jobs: the last page in %v", time.Since(start))
	if n := eval[int](p, `document.getElementsByTagName('*').length`); n > 5000 {
		t.Errorf("the run page's last page has %d elements: not bounded", n)
	}
	// The last job's page finds its report entry (here: no sandbox) in one
	// request, not by paging the run's jobs from the first.
	start = time.Now()
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/runs/big/jobs/job-09999'`))
	p.wait(`document.querySelector('#job-sandbox')?.dataset.sandbox === 'off'`, "the last job's report entry")
	t.Logf("benchmark: console job page of the last of 10,000 jobs: its report entry in %v", time.Since(start))
}
