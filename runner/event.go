package runner

import (
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/report"
)

// Event types sent to a Reporter.
const (
	EventRunStarted  = "run_started"
	EventJobStarted  = "job_started"
	EventAPIRetry    = "api_retry"
	EventJobRetry    = "job_retry"
	EventJobFinished = "job_finished"
	EventRunFinished = "run_finished"
	// EventConcurrency: a storm of 429/529 answers lowered the number of
	// CLIs that may run at once, or calm raised it again (Concurrency).
	EventConcurrency = "concurrency_changed"
	// EventUsageLimitWait: a usage limit stopped a job; the run waits until
	// ResumeAt, then continues the held jobs (Message says so for people).
	EventUsageLimitWait = "usage_limit_wait"
	// EventUsageReserve: a job reported a utilization past
	// limits.reserve_utilization; no new job starts.
	EventUsageReserve = "usage_reserve"
	// EventCompactBoundary: a job's CLI compacted its conversation
	// (Compact). EventModelFallback: its model refused and the CLI went on
	// with Model. EventWritesLost: it could not save its transcript or
	// config (Reason is the error code). EventBackgroundTask: a background
	// task started or ended (Task).
	EventCompactBoundary = "compact_boundary"
	EventModelFallback   = "model_fallback"
	EventWritesLost      = "session_writes_lost"
	EventBackgroundTask  = "background_task"
	// EventHook: with include_hook_events, a hook of the job's CLI started,
	// made progress or answered (Hook; Status is its outcome, "success",
	// "error" or "cancelled", on the answer). Its output stays in the
	// stream.
	EventHook = "hook"
)

// Fine event types: the inside of a job, sent only to Options.Observer
// (telemetry, the run's events.jsonl under `pneuma run` and `pneuma serve`,
// and the live view), never to Reporter, so that --json keeps its shape.
const (
	// EventAttemptStarted: an attempt's CLI starts (WaitMS: its wait for a
	// start slot). EventAttemptFinished ends it (Status, Reason, Error,
	// CostUSD, DurationMS).
	EventAttemptStarted  = "attempt_started"
	EventAttemptFinished = "attempt_finished"
	// EventTurnStarted: a prompt went to the CLI (Turn counts them per
	// attempt). EventTurnFinished: its result came (Status, CostUSD: the
	// process's cumulative cost, Usage, Model, DurationMS).
	EventTurnStarted  = "turn_started"
	EventTurnFinished = "turn_finished"
	// EventToolCall: a tool call ended (or never got a result); Tool says
	// which, how it was decided and how it went.
	EventToolCall = "tool_call"
	// EventToolStarted: the CLI asked for a tool call (Tool: its name, input
	// summary and Started; Decision so far). EventToolCall ends it.
	EventToolStarted = "tool_started"
	// EventWriting: the main thread wrote text to the user.
	EventWriting = "writing"
	// EventStopping: pneuma began the stop ladder of a job's CLI (Reason).
	EventStopping = "stopping"
)

// IsFine says whether typ is a fine event type: one an Observer gets and a
// Reporter does not (an Observer that records only what the Reporter
// leaves out, as a served run's event log does, tells them apart by it).
func IsFine(typ string) bool {
	switch typ {
	case EventAttemptStarted, EventAttemptFinished, EventTurnStarted, EventTurnFinished,
		EventToolCall, EventToolStarted, EventWriting, EventStopping:
		return true
	}
	return false
}

// ToolCall is one tool call of a tool_call event. Input is a short summary
// of its input with secrets redacted.
type ToolCall struct {
	Name      string    `json:"name"`
	ToolUseID string    `json:"tool_use_id"`
	Input     string    `json:"input"`
	Decision  string    `json:"decision"`
	Rule      string    `json:"rule,omitempty"`
	Via       string    `json:"via,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	OK        *bool     `json:"ok"`
	Error     string    `json:"error,omitempty"`
	Started   time.Time `json:"started"`
}

// Event is one thing that happened during a run, for progress displays and
// `--json` consumers. Fields not relevant to a type are empty.
type Event struct {
	Type  string    `json:"type"`
	Time  time.Time `json:"time"`
	RunID string    `json:"run_id"`
	// Jobs is the number of jobs in the run (run_started).
	Jobs    int    `json:"jobs,omitempty"`
	Job     string `json:"job,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// MaxRetries is the CLI's limit of its own retries (api_retry).
	MaxRetries int    `json:"max_retries,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// DelayMS is the wait before the next attempt (job_retry) or the CLI's
	// own retry delay (api_retry).
	DelayMS int64 `json:"delay_ms,omitempty"`
	// ErrorStatus is the HTTP status behind an API retry, when known.
	ErrorStatus *int `json:"error_status,omitempty"`
	// Branch and Worktree say where a started job works.
	Branch   string `json:"branch,omitempty"`
	Worktree string `json:"worktree,omitempty"`
	// Concurrency is the new limit of a concurrency_changed event.
	Concurrency int `json:"concurrency,omitempty"`
	// ResumeAt is when a usage_limit_wait ends.
	ResumeAt *time.Time `json:"resume_at,omitempty"`
	// Message is a line for people (usage_limit_wait, usage_reserve).
	Message string `json:"message,omitempty"`
	// SpentUSD is the run's spend so far.
	SpentUSD float64     `json:"spent_usd"`
	Result   *report.Job `json:"result,omitempty"`
	// The fields of the fine events (Options.Observer).
	Turn       int           `json:"turn,omitempty"`
	Status     string        `json:"status,omitempty"`
	Error      string        `json:"error,omitempty"`
	Model      string        `json:"model,omitempty"`
	CostUSD    float64       `json:"cost_usd,omitempty"`
	Usage      *report.Usage `json:"usage,omitempty"`
	WaitMS     int64         `json:"wait_ms,omitempty"`
	DurationMS int64         `json:"duration_ms,omitempty"`
	Tool       *ToolCall     `json:"tool,omitempty"`
	// Compact and Task are the payloads of compact_boundary and
	// background_task.
	Compact *claude.CompactBoundary `json:"compact,omitempty"`
	Task    *claude.Task            `json:"task,omitempty"`
	// Hook is the payload of a hook event.
	Hook   *claude.Hook   `json:"hook,omitempty"`
	Report *report.Report `json:"report,omitempty"`
}

// Reporter receives run events. Run calls it from several goroutines at
// once; implementations must be safe for that and must not block for long.
type Reporter interface {
	Event(Event)
}

type nopReporter struct{}

func (nopReporter) Event(Event) {}

// teeReporter sends each event to the Reporter and then the Observer.
type teeReporter struct{ a, b Reporter }

func (t teeReporter) Event(e Event) {
	t.a.Event(e)
	t.b.Event(e)
}

// observe sends a fine event to the Observer, if there is one.
func (r *run) observe(e Event) {
	if r.opts.Observer == nil {
		return
	}
	e.Time, e.RunID = time.Now(), r.plan.RunID
	r.opts.Observer.Event(e)
}

// event fills in what every event carries and tells the reporter.
func (r *run) event(e Event) {
	e.Time, e.RunID, e.SpentUSD = time.Now(), r.plan.RunID, r.spentSoFar()
	r.opts.Reporter.Event(e)
}
