package runner

import (
	"context"
	"errors"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/report"
)

// A job's lifecycle is four stages, each in its own file:
//
//	prepare.go   the workspace (worktree, branch) and the records
//	attempts.go  CLI attempts, with retries that resume the session
//	driver.go    one attempt's turns, and the verify stage between them
//	finish.go    commit leftovers, record changes, archive, release the worktree
//
// runJob strings them together; a server session (session.go) uses the same
// stages with turns that come from a client.

// runJob runs one job through its whole lifecycle and returns its result.
func (r *run) runJob(ctx context.Context, job *Job) report.Job {
	start := time.Now()
	res := r.baseResult(job)
	rec := JobDir(job.JobDir)
	res.Stream = rec.Stream()
	prior := r.journal.state(job.Name)
	if _, ok := r.budgetLeft(); !ok {
		return r.skipped(job, report.ReasonBudget)
	}
	if prior == nil || prior.State != StateRunning {
		if err := r.admit(ctx); errors.Is(err, errHeld) {
			res := r.skipped(job, report.ReasonUsageLimit)
			res.Error = r.heldError()
			return res
		} else if err != nil {
			return r.skipped(job, stopReason(ctx))
		}
	}

	ws, err := r.prepareWorkspace(ctx, job, prior)
	res.Timings.WorktreeMS = time.Since(start).Milliseconds()
	defer func() { closeWatch(ws.watch) }() // unless parked with the worktree
	if err != nil {
		if !ws.created {
			res.Worktree, res.Branch = "", ""
		}
		return failed(res, report.ReasonWorkspace, err)
	}
	records, err := openRecords(rec, r.opts.StderrLimit)
	if err != nil {
		return failed(res, report.ReasonWorkspace, err)
	}
	defer records.close() // for the early returns; closed below with its error kept
	box, err := r.openSandbox(job)
	if err != nil {
		return failed(res, report.ReasonWorkspace, err)
	}
	defer closeSandbox(box) // after finishJob: its transcript is read from the box's config dir
	ctx = withBox(ctx, box)
	r.started(job, start)

	sessionID := r.attempts(ctx, job, records, prior, &res)
	records.audit.flush()
	res.ToolCalls, res.ToolDenials = records.audit.counts()
	if records.audit.written() {
		res.Audit = rec.Audit()
	}
	if r.finishJob(ctx, job, &res, records, sessionID, ws.watch) {
		ws.watch = nil // parked with the worktree, for the next job
	}
	expectChanges(job, &res)
	if err := records.close(); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	noteSandbox(&res, box)
	res.DurationMS = time.Since(start).Milliseconds()
	redactResult(&res)
	return res
}

// failed ends a job that could not run, for why, with err.
func failed(res report.Job, why string, err error) report.Job {
	res.Status, res.Reason, res.Error = report.StatusFailed, why, redact.String(err.Error())
	return res
}

// started records that a job's CLI work begins and tells the reporter.
func (r *run) started(job *Job, at time.Time) {
	r.journal.update(job.Name, func(s *JobState) {
		s.State = StateRunning
		s.WorktreeCreated = job.UseWorktree
		s.StartedAt = at.UTC()
	})
	r.journal.touch()
	r.event(Event{Type: EventJobStarted, Job: job.Name, Branch: job.Branch, Worktree: job.Dir})
}

// redactResult keeps secrets out of a report: model output and CLI errors
// can quote them.
func redactResult(res *report.Job) {
	res.Result, res.Error = redact.String(res.Result), redact.String(res.Error)
	for i := range res.Attempts {
		res.Attempts[i].Error = redact.String(res.Attempts[i].Error)
	}
}

// event fills in what every event carries and tells the reporter.
func (r *run) event(e Event) {
	e.Time, e.RunID, e.SpentUSD = time.Now(), r.plan.RunID, r.spentSoFar()
	r.opts.Reporter.Event(e)
}
