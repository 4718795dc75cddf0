package notify

import (
	"fmt"
	"sync"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// Reporter returns a runner.Reporter that passes each event to next (nil
// for none) and turns a run's events into notifications: job_failed and
// job_succeeded at a job's end, budget_reached at the first job the
// budget stopped, usage_limit_hold, and run_finished with the report's
// totals. console, when set, gives a run's page in the console.
func (n *Notifier) Reporter(next runner.Reporter, console func(runID string) string) runner.Reporter {
	if !n.Enabled() {
		if next == nil {
			return nopReporter{}
		}
		return next
	}
	return &reporter{n: n, next: next, console: console}
}

type nopReporter struct{}

func (nopReporter) Event(runner.Event) {}

type reporter struct {
	n       *Notifier
	next    runner.Reporter
	console func(runID string) string

	mu     sync.Mutex
	budget bool // budget_reached was sent
}

// Event is runner.Reporter.
func (r *reporter) Event(e runner.Event) {
	if r.next != nil {
		r.next.Event(e)
	}
	if nt, ok := r.notification(e); ok {
		nt.RunID, nt.Time = e.RunID, e.Time
		if r.console != nil {
			nt.ConsoleURL = r.console(e.RunID)
		}
		r.n.Notify(nt)
	}
}

// notification is what e tells people, if anything.
func (r *reporter) notification(e runner.Event) (Notification, bool) {
	switch e.Type {
	case runner.EventJobFinished:
		return r.jobFinished(e)
	case runner.EventRunFinished:
		if e.Report == nil {
			return Notification{}, false
		}
		t := e.Report.Totals
		title := fmt.Sprintf("pneuma run %s finished: %d of %d jobs succeeded", e.RunID, t.Succeeded, t.Jobs)
		return Notification{Event: EventRunFinished, Title: title, Totals: &t, CostUSD: t.CostUSD,
			Status: runStatus(t)}, true
	case runner.EventUsageLimitWait:
		return Notification{Event: EventUsageLimitHold, Job: e.Job, ResumeAt: e.ResumeAt, Message: e.Message,
			Title: fmt.Sprintf("pneuma run %s is held by a usage limit", e.RunID)}, true
	}
	return Notification{}, false
}

func (r *reporter) jobFinished(e runner.Event) (Notification, bool) {
	res := e.Result
	if res == nil {
		return Notification{}, false
	}
	nt := Notification{Job: e.Job, Status: res.Status, Reason: res.Reason, Error: res.Error, CostUSD: res.CostUSD}
	switch {
	case res.Reason == report.ReasonBudget:
		r.mu.Lock()
		first := !r.budget
		r.budget = true
		r.mu.Unlock()
		if !first {
			return Notification{}, false
		}
		nt.Event, nt.Title = EventBudgetReached, fmt.Sprintf("pneuma run %s reached its budget: $%.4f spent", e.RunID, e.SpentUSD)
		nt.Message = "No further job starts."
	case res.Status == report.StatusSucceeded:
		nt.Event, nt.Title = EventJobSucceeded, fmt.Sprintf("pneuma job %s succeeded", e.Job)
	case res.Status == report.StatusFailed:
		nt.Event, nt.Title = EventJobFailed, fmt.Sprintf("pneuma job %s failed (%s)", e.Job, res.Reason)
	default:
		return Notification{}, false // skipped or interrupted: run_finished counts them
	}
	return nt, true
}

// runStatus is succeeded when every job did, else failed.
func runStatus(t report.Totals) string {
	if t.Succeeded == t.Jobs {
		return report.StatusSucceeded
	}
	return report.StatusFailed
}
