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
// runJob strings them together. A server session (session.go) is a run of
// one job through the same functions: openJob when it opens, driveJob
// until it closes, its prompts coming from its client.

// runJob runs one job through its whole lifecycle and returns its result.
func (r *run) runJob(ctx context.Context, job *Job) report.Job {
	jr, ok := r.openJob(ctx, job)
	if !ok {
		return jr.res
	}
	return r.driveJob(ctx, jr)
}

// jobRun is a job whose workspace and records are prepared.
type jobRun struct {
	job   *Job
	res   report.Job
	rec   *records
	ws    workspace
	prior *JobState
	start time.Time
}

// openJob passes the gate and prepares the job's workspace and records.
// When it cannot (ok false), jr.res is the job's result.
func (r *run) openJob(ctx context.Context, job *Job) (jr *jobRun, ok bool) {
	jr = &jobRun{job: job, start: time.Now(), res: r.baseResult(job)}
	rec := JobDir(job.JobDir)
	jr.res.Stream = rec.Stream()
	jr.prior = r.journal.state(job.Name)
	if _, ok := r.budgetLeft(); !ok {
		jr.res = r.skipped(job, report.ReasonBudget)
		return jr, false
	}
	// A session opens at once; its CLI starts pass the gate (attempt).
	if r.client == nil && (jr.prior == nil || jr.prior.State != StateRunning) {
		if err := r.admit(ctx); errors.Is(err, errHeld) {
			jr.res = r.skipped(job, report.ReasonUsageLimit)
			jr.res.Error = r.heldError()
			return jr, false
		} else if err != nil {
			jr.res = r.skipped(job, stopReason(ctx))
			return jr, false
		}
	}
	ws, err := r.prepareWorkspace(ctx, job, jr.prior)
	jr.res.Timings.WorktreeMS = time.Since(jr.start).Milliseconds()
	jr.ws = ws
	if err != nil {
		closeWatch(ws.watch)
		if !ws.created {
			jr.res.Worktree, jr.res.Branch = "", ""
		}
		jr.res = failed(jr.res, report.ReasonWorkspace, err)
		return jr, false
	}
	if jr.rec, err = openRecords(rec, r.opts.StderrLimit); err != nil {
		closeWatch(ws.watch)
		jr.res = failed(jr.res, report.ReasonWorkspace, err)
		return jr, false
	}
	r.started(job, jr.start)
	return jr, true
}

// driveJob runs a prepared job's attempts and its finish stage.
func (r *run) driveJob(ctx context.Context, jr *jobRun) report.Job {
	job, res, records := jr.job, &jr.res, jr.rec
	records.audit.onCall = r.toolObserver(job.Name)
	records.audit.onStart, records.audit.onText = r.toolStartObserver(job.Name), r.textObserver(job.Name)
	defer func() { closeWatch(jr.ws.watch) }() // unless parked with the worktree
	defer records.close()                      // for a panic; closed below with its error kept
	box, err := r.openSandbox(job)
	if err != nil {
		*res = failed(*res, report.ReasonWorkspace, err)
		return *res
	}
	defer closeSandbox(box) // after the finish stage: its transcript is read from the box's config dir
	if box != nil {
		records.audit.inspect = box.NoteToolResult
	}
	ctx = withBox(ctx, box)
	sessionID := r.attempts(ctx, job, records, jr.prior, res)
	records.audit.flush()
	res.ToolCalls, res.ToolDenials = records.audit.counts()
	if records.audit.written() {
		res.Audit = records.dir.Audit()
	}
	if r.finishJob(ctx, job, res, records, sessionID, jr.ws.watch) {
		jr.ws.watch = nil // parked with the worktree, for the next job
	}
	expectChanges(job, res)
	if err := records.close(); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	noteSandbox(res, box)
	res.DurationMS = time.Since(jr.start).Milliseconds()
	redactResult(res)
	return *res
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
