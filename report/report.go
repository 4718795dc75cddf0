// Package report defines pneuma's run report (schema "pneuma.report/v1") and
// renders it for CI: JSON, JUnit XML and a Markdown summary. It also merges the
// reports of shards into one. It knows nothing about how jobs are run.
package report

import (
	"encoding/json"
	"math"
	"time"

	"github.com/pneuma-cli/pneuma/usage"
)

// Schema is the value of Report.Schema for this version of the format.
const Schema = "pneuma.report/v1"

// Run statuses.
const (
	RunSucceeded   = "succeeded"
	RunFailed      = "failed"
	RunInterrupted = "interrupted"
)

// Job statuses.
const (
	StatusSucceeded   = "succeeded"
	StatusFailed      = "failed"
	StatusSkipped     = "skipped"
	StatusInterrupted = "interrupted"
)

// Reasons a job did not succeed.
const (
	ReasonMaxTurns     = "max_turns"
	ReasonMaxBudget    = "max_budget"
	ReasonAPIError     = "api_error"
	ReasonCLIError     = "cli_error"
	ReasonNoResult     = "no_result"
	ReasonTimeout      = "timeout"
	ReasonIdleTimeout  = "idle_timeout"
	ReasonInterrupted  = "interrupted"
	ReasonBudget       = "budget"
	ReasonVerifyFailed = "verify_failed"
	ReasonWorkspace    = "workspace_error"
	ReasonFailFast     = "fail_fast"
	ReasonPermission   = "permission_denied"
	ReasonExecution    = "execution_error"
	ReasonNotRun       = "not_run"
	// ReasonUsageLimit: the account's usage limit was reached and pneuma
	// could not wait for the reset (limits.wait off, or beyond max_wait), or
	// its utilization passed limits.reserve_utilization before the job began.
	ReasonUsageLimit = "usage_limit"
	// ReasonNoChanges: expect: {changes: true} and the job changed no file.
	ReasonNoChanges = "no_changes"
	// ReasonAskedQuestion: expect: {no_questions: true} and the final answer
	// asks the user something.
	ReasonAskedQuestion = "asked_question"
	// ReasonMCPFailed: expect: {mcp: true} and an MCP server failed to start.
	ReasonMCPFailed = "mcp_failed"
	// ReasonInvalidOutput: the structured output does not match output_schema.
	ReasonInvalidOutput = "invalid_output"
	// ReasonResumeFailed: the CLI rejected --resume (an attempt's reason;
	// the job went on in a fresh session).
	ReasonResumeFailed = "resume_failed"
	// ReasonRefusal: the model refused (the result's stop_reason is
	// "refusal", after the CLI's own retry and any fallback model); never
	// retried.
	ReasonRefusal = "refusal"
)

// Report is the whole outcome of one run (or of merged shards).
type Report struct {
	Schema     string    `json:"schema"`
	RunID      string    `json:"run_id"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	// Status is succeeded, failed or interrupted.
	Status string  `json:"status"`
	Shard  *Shard  `json:"shard,omitempty"`
	Budget *Budget `json:"budget,omitempty"`
	Totals Totals  `json:"totals"`
	Jobs   []Job   `json:"jobs"`
	// Warnings are problems that failed no job but need attention.
	Warnings []Warning `json:"warnings,omitempty"`
	// RateLimit is the latest account rate-limit state any job saw.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// Merged lists the reports Merge joined into this one, in input order;
	// it is empty for the report of a single run.
	Merged []MergedReport `json:"merged,omitempty"`

	// source, when set, yields the jobs instead of Jobs (Streamed).
	source JobSource
	// encoded, when set with source, yields the same jobs already encoded,
	// for the JSON writers (StreamedEncoded).
	encoded EncodedJobSource
	// file, when set with source, is the report file source reads the
	// jobs of (StreamFile), for EachEncodedJob.
	file string
}

// MergedReport records one of the reports Merge joined.
type MergedReport struct {
	RunID      string    `json:"run_id"`
	Shard      *Shard    `json:"shard,omitempty"`
	Status     string    `json:"status"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Jobs       int       `json:"jobs"`
}

// Shard says which part of the plan this report covers (1-based Index).
type Shard struct {
	Index int `json:"index"`
	Total int `json:"total"`
}

// Budget is the run-wide spending cap and what was spent against it.
type Budget struct {
	CapUSD   float64 `json:"cap_usd"`
	SpentUSD float64 `json:"spent_usd"`
}

// Totals sums the jobs of a report.
type Totals struct {
	Jobs                     int     `json:"jobs"`
	Succeeded                int     `json:"succeeded"`
	Failed                   int     `json:"failed"`
	Skipped                  int     `json:"skipped"`
	Interrupted              int     `json:"interrupted"`
	CostUSD                  float64 `json:"cost_usd"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	NumTurns                 int     `json:"num_turns"`
	DurationMS               int64   `json:"duration_ms"`
}

// Warning codes.
const (
	// WarnWorktreeNotRemoved: a clean worktree could not be removed at the
	// end of a run; `pneuma clean` removes it.
	WarnWorktreeNotRemoved = "worktree_not_removed"
	// WarnUsageReserve: the account's utilization passed
	// limits.reserve_utilization, so the jobs after it did not start.
	WarnUsageReserve = "usage_reserve"
	// WarnAskedQuestion: a successful job's final answer asks the user
	// something, so it may have stopped short.
	WarnAskedQuestion = "asked_question"
	// WarnMCPFailed: an MCP server of the job failed or needs auth.
	WarnMCPFailed = "mcp_failed"
	// WarnPermissionDenied: tool calls were refused in a permission mode
	// other than bypassPermissions.
	WarnPermissionDenied = "permission_denied"
	// WarnSandboxRefused: the job's sandbox proxy refused connections;
	// sandbox.refused lists them.
	WarnSandboxRefused = "sandbox_refused"
	// WarnSandboxRef: a commit inside the sandbox moved the job's branch
	// in a way pneuma did not carry out, or objects git wrote inside were
	// refused; sandbox.ref_errors says why.
	WarnSandboxRef = "sandbox_ref"
	// WarnSessionWritesLost: the CLI could not save part of the session
	// (disk full, quota): its transcript is incomplete.
	WarnSessionWritesLost = "session_writes_lost"
	// WarnTasksRunning: background tasks were still running when the job's
	// last result came; tasks_running lists them.
	WarnTasksRunning = "tasks_running"
)

// Warning is a problem that failed no job but needs a person's attention.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    string `json:"path,omitempty"`
}

// RateLimit is the account's unified rate-limit state as the CLI last
// reported it (subscription auth only).
type RateLimit struct {
	// Status is allowed, allowed_warning or rejected.
	Status   string    `json:"status"`
	ResetsAt time.Time `json:"resets_at,omitzero"`
	// Type is the limit that applies: five_hour, seven_day, ...
	Type        string   `json:"type,omitempty"`
	Utilization *float64 `json:"utilization,omitempty"`
}

// Usage is token usage as the Claude Code CLI reports it in a result.
type Usage = usage.Tokens

// ModelUsage is the CLI's per-model accounting (result.modelUsage).
type ModelUsage struct {
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CostUSD                  float64 `json:"cost_usd"`
}

// PermissionDenial is one tool call the CLI's permission system refused.
type PermissionDenial struct {
	ToolName  string         `json:"tool_name"`
	ToolUseID string         `json:"tool_use_id"`
	ToolInput map[string]any `json:"tool_input,omitempty"`
}

// Job is the outcome of one job.
type Job struct {
	Name string `json:"name"`
	// Position is the job's 0-based place in the whole plan (the jobs file,
	// before sharding and --only). Merge orders jobs by it, so a merged report
	// lists them as the unsharded run would.
	Position int `json:"position"`
	// Status is succeeded, failed, skipped or interrupted.
	Status string `json:"status"`
	// Reason says why a job did not succeed (empty when it did).
	Reason            string                `json:"reason,omitempty"`
	SessionID         string                `json:"session_id,omitempty"`
	Model             string                `json:"model,omitempty"`
	CostUSD           float64               `json:"cost_usd"`
	CostEstimated     bool                  `json:"cost_estimated"`
	Usage             Usage                 `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"model_usage,omitempty"`
	NumTurns          int                   `json:"num_turns"`
	DurationMS        int64                 `json:"duration_ms"`
	ExitCode          int                   `json:"exit_code"`
	Error             string                `json:"error,omitempty"`
	Result            string                `json:"result,omitempty"`
	PermissionDenials Denials               `json:"permission_denials"`
	Repo              string                `json:"repo"`
	Worktree          string                `json:"worktree,omitempty"`
	Branch            string                `json:"branch,omitempty"`
	Base              string                `json:"base"`
	Commit            string                `json:"commit,omitempty"`
	FilesChanged      int                   `json:"files_changed"`
	Insertions        int                   `json:"insertions"`
	Deletions         int                   `json:"deletions"`
	Transcript        string                `json:"transcript,omitempty"`
	Stream            string                `json:"stream,omitempty"`
	Attempts          []Attempt             `json:"attempts,omitempty"`
	ToolCalls         int                   `json:"tool_calls"`
	ToolDenials       int                   `json:"tool_denials"`
	// Verify holds the rounds of the job's verification command, if it has one.
	Verify []VerifyRound `json:"verify,omitempty"`
	// Audit is the job's tool audit log (audit.jsonl), if it was written.
	Audit string `json:"audit,omitempty"`
	// Timings says where the job's time went.
	Timings Timings `json:"timings,omitzero"`
	// Warnings are findings that failed nothing but need a look: a success
	// that is suspect (asked_question, mcp_failed, permission_denied), a
	// failed push or pull request (push_failed, pr_failed).
	Warnings []Warning `json:"warnings,omitempty"`
	// RateLimit is the latest rate-limit state the job's CLI reported.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// StructuredOutput is the job's answer as JSON when it has an
	// output_schema (also in jobs/<job>/output.json).
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	// FallbackModel is the job's fallback_model, when it has one; Model
	// then names the model that served the last answer.
	FallbackModel string `json:"fallback_model,omitempty"`
	// Pushed is true when pneuma pushed the job's branch to its remote
	// (jobs with push or pull_request).
	Pushed bool `json:"pushed,omitempty"`
	// PRURL is the pull request pneuma opened for the job's branch.
	PRURL string `json:"pr_url,omitempty"`
	// Sandbox is how the job was confined; nil when it ran without a
	// sandbox (sandbox job field, --sandbox).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// APIRetries counts the API calls the CLI retried (api_retry lines).
	APIRetries int `json:"api_retries"`
	// Compactions counts the times the CLI compacted the conversation.
	Compactions int `json:"compactions,omitempty"`
	// HookRuns counts the hooks the CLI ran, with include_hook_events.
	HookRuns int `json:"hook_runs,omitempty"`
	// HookFailures counts the hooks whose hook_response said error or
	// cancelled, with include_hook_events.
	HookFailures int `json:"hook_failures,omitempty"`
	// RefusalFallback says the model refused and the CLI switched to a
	// fallback model; Model then names the model that served.
	RefusalFallback *RefusalFallback `json:"refusal_fallback,omitempty"`
	// TasksRunning are the background tasks still running at the job's
	// last result (the CLI was then closed; a warning says so).
	TasksRunning []Task `json:"tasks_running,omitempty"`
}

// RefusalFallback is a model_refusal_fallback the CLI reported.
type RefusalFallback struct {
	OriginalModel string `json:"original_model"`
	FallbackModel string `json:"fallback_model"`
	// Scope is "session" (the rest of the session) or "local" (one answer).
	Scope string `json:"scope,omitempty"`
}

// Task is a background task of the CLI (a shell, a subagent, a workflow).
type Task struct {
	ID          string `json:"id"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
}

// Sandbox is a job's sandbox as it ran: the rules it was given and what
// its network proxy and its filesystem refused.
type Sandbox struct {
	// Network lists the destinations the proxy allowed: the API endpoint,
	// then the job's sandbox.network.
	Network []string `json:"network"`
	// Read and Write are the paths the job opened besides the defaults.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Refused lists the destinations the proxy refused, most refused
	// first; RefusedCount sums their counts.
	Refused      []RefusedHost `json:"refused,omitempty"`
	RefusedCount int           `json:"refused_count"`
	// Denied lists the reads and writes the sandbox refused, as the job's
	// tool results show them (a write failing with "Read-only file
	// system", a read of a path that exists outside failing with "No such
	// file or directory"), most frequent first; DeniedReads and
	// DeniedWrites sum their counts.
	Denied       []DeniedPath `json:"denied,omitempty"`
	DeniedReads  int          `json:"denied_reads"`
	DeniedWrites int          `json:"denied_writes"`
	// RefErrors are updates of the job's branch made inside that pneuma
	// did not carry out to the repository, and objects git wrote inside
	// that the repository refused.
	RefErrors []string `json:"ref_errors,omitempty"`
}

// DeniedPath is one path a sandbox kept a job from, and how often.
type DeniedPath struct {
	// Op is "read" or "write".
	Op    string `json:"op"`
	Path  string `json:"path"`
	Count int    `json:"count"`
}

// RefusedHost is one destination a sandbox's proxy refused, and how often.
type RefusedHost struct {
	Host  string `json:"host"`
	Count int    `json:"count"`
}

// Timings breaks a job's duration down, in milliseconds.
type Timings struct {
	WorktreeMS int64 `json:"worktree_ms"`
	WaitMS     int64 `json:"wait_ms"`
	CLIMS      int64 `json:"cli_ms"`
	CommitMS   int64 `json:"commit_ms"`
	DiffMS     int64 `json:"diff_ms"`
	ArchiveMS  int64 `json:"archive_ms"`
	RemoveMS   int64 `json:"remove_ms"`
}

// VerifyRound is one run of a job's verification command.
type VerifyRound struct {
	Round      int      `json:"round"`
	Command    []string `json:"command"`
	ExitCode   int      `json:"exit_code"`
	Passed     bool     `json:"passed"`
	TimedOut   bool     `json:"timed_out,omitempty"`
	Output     string   `json:"output"`
	DurationMS int64    `json:"duration_ms"`
	// CostUSD is what the agent's turn before this round cost.
	CostUSD float64 `json:"cost_usd"`
}

// Attempt is one try of a job (a job with retries has several).
type Attempt struct {
	Number        int     `json:"number"`
	Status        string  `json:"status"`
	Reason        string  `json:"reason,omitempty"`
	SessionID     string  `json:"session_id,omitempty"`
	CostUSD       float64 `json:"cost_usd"`
	CostEstimated bool    `json:"cost_estimated"`
	DurationMS    int64   `json:"duration_ms"`
	ExitCode      int     `json:"exit_code"`
	Error         string  `json:"error,omitempty"`
}

// Tally recomputes r.Totals and r.Status from r.Jobs (or its source). interrupted says the run
// was stopped by a signal; otherwise any job that did not succeed fails the run.
// Totals.DurationMS is the sum of the jobs' durations, not the run's wall time
// (that is FinishedAt - StartedAt).
func (r *Report) Tally(interrupted bool) {
	var t Totals
	_ = r.EachJob(func(j *Job) error { // a source's error leaves the totals of what it read
		t.Add(j)
		return nil
	})
	r.Totals = t
	r.Status = t.RunStatus(interrupted)
}

// Add counts one job.
func (t *Totals) Add(j *Job) {
	t.Jobs++
	switch j.Status {
	case StatusSucceeded:
		t.Succeeded++
	case StatusFailed:
		t.Failed++
	case StatusSkipped:
		t.Skipped++
	case StatusInterrupted:
		t.Interrupted++
	}
	// Summed in billionths of a dollar, integers, so the total does not
	// depend on the order jobs finished in (a float sum of the same costs
	// ends in 0.015 in one order and 0.015000000000000001 in another).
	t.CostUSD = float64(toNanoUSD(t.CostUSD)+toNanoUSD(j.CostUSD)) / 1e9
	t.InputTokens += j.Usage.InputTokens
	t.OutputTokens += j.Usage.OutputTokens
	t.CacheReadInputTokens += j.Usage.CacheReadInputTokens
	t.CacheCreationInputTokens += j.Usage.CacheCreationInputTokens
	t.NumTurns += j.NumTurns
	t.DurationMS += j.DurationMS
}

// toNanoUSD is usd in billionths of a dollar, rounded.
func toNanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// RunStatus is the status of a run with these totals: interrupted when a
// signal stopped it, else failed when any job did not succeed.
func (t Totals) RunStatus(interrupted bool) string {
	switch {
	case interrupted:
		return RunInterrupted
	case t.Failed > 0 || t.Skipped > 0 || t.Interrupted > 0:
		// A skipped job (budget spent, fail-fast) is work not done: CI must see it.
		return RunFailed
	}
	return RunSucceeded
}
