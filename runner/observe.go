package runner

import (
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
)

// The fine events of Options.Observer are built here, so that the
// lifecycle stages emit each with one call.

// toolInputMax bounds the input summary of a tool_call event.
const toolInputMax = 200

// toolObserver returns the audit's onCall for a job: each written audit
// entry becomes a tool_call event. It returns nil without an Observer.
func (r *run) toolObserver(job string) func(auditEntry) {
	if r.opts.Observer == nil {
		return nil
	}
	return func(e auditEntry) {
		r.observe(Event{Type: EventToolCall, Job: job, Tool: &ToolCall{
			Name: e.Tool, ToolUseID: e.ToolUseID, Input: text.Truncate(redact.String(e.Input), toolInputMax),
			Decision: e.Decision, Rule: e.Rule, Via: e.Via, Agent: e.Agent, OK: e.OK,
			Error: redact.String(e.Error), Started: e.Time,
		}})
	}
}

// toolStartObserver returns the audit's onStart for a job: each tool_use
// seen becomes a tool_started event (the live view's "what it is doing
// now"). It returns nil without an Observer.
func (r *run) toolStartObserver(job string) func(auditEntry) {
	if r.opts.Observer == nil {
		return nil
	}
	return func(e auditEntry) {
		r.observe(Event{Type: EventToolStarted, Job: job, Tool: &ToolCall{
			Name: e.Tool, ToolUseID: e.ToolUseID, Input: text.Truncate(redact.String(e.Input), toolInputMax),
			Decision: e.Decision, Agent: e.Agent, Started: e.Time,
		}})
	}
}

// textObserver returns the audit's onText for a job: the main thread's text
// becomes a writing event. It returns nil without an Observer.
func (r *run) textObserver(job string) func() {
	if r.opts.Observer == nil {
		return nil
	}
	return func() { r.observe(Event{Type: EventWriting, Job: job}) }
}

// observeTurn tells the Observer that turn n of a job's attempt began.
func (r *run) observeTurn(job string, n int) {
	r.observe(Event{Type: EventTurnStarted, Job: job, Turn: n})
}

// observeResult tells the Observer that a turn's result came.
func (r *run) observeResult(job string, n int, res *claude.Result, model string) {
	if r.opts.Observer == nil || res == nil {
		return
	}
	status := "ok"
	if res.IsError {
		status = "error"
	}
	u, _ := claudeUsage(res.ModelUsage, res.Usage)
	r.observe(Event{Type: EventTurnFinished, Job: job, Turn: n, Status: status, Model: model,
		CostUSD: res.TotalCostUSD, Usage: &u, DurationMS: res.DurationMS, ErrorStatus: res.APIErrorStatus,
		Error: text.Truncate(redact.String(joinErrs(res.Errors)), 300)})
}

// observeAttempt tells the Observer that an attempt ended.
func (r *run) observeAttempt(job string, number int, a *attempt) {
	r.observe(Event{Type: EventAttemptFinished, Job: job, Attempt: number, Status: a.status, Reason: a.reason,
		Error: text.Truncate(redact.String(a.err), 300), CostUSD: a.cost, Model: a.model,
		Usage: &a.usage, WaitMS: a.waited.Milliseconds(), DurationMS: a.duration.Milliseconds()})
}

// observeStart tells the Observer that an attempt's CLI starts after
// waiting for its slot.
func (r *run) observeStart(job string, waited time.Duration) {
	r.observe(Event{Type: EventAttemptStarted, Job: job, WaitMS: waited.Milliseconds()})
}

func joinErrs(errs []string) string {
	out := ""
	for _, e := range errs {
		out = joinErr(out, e)
	}
	return out
}

// stopObserver returns the stopper's onStop for a job: the stop ladder's
// start becomes a stopping event. It returns nil without an Observer.
func (r *run) stopObserver(job string) func(string) {
	if r.opts.Observer == nil {
		return nil
	}
	return func(reason string) { r.observe(Event{Type: EventStopping, Job: job, Reason: reason}) }
}
