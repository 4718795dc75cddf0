package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/usage"
	"github.com/pneuma-cli/pneuma/worktree"
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
)

// Fine event types: the inside of a job, sent only to Options.Observer
// (telemetry), never to Reporter, so that --json and the server's event
// logs keep their shape.
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
	// EventStopping: pneuma began the stop ladder of a job's CLI (Reason).
	EventStopping = "stopping"
)

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
	Reason  string `json:"reason,omitempty"`
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
	Report  *report.Report          `json:"report,omitempty"`
}

// Reporter receives run events. Run calls it from several goroutines at
// once; implementations must be safe for that and must not block for long.
type Reporter interface {
	Event(Event)
}

// Options are the run-time settings of Run.
type Options struct {
	// Git does the runner's git work (default worktree.New()); a plan and
	// its run share one to share its caches.
	Git *worktree.Manager
	// Reporter receives progress events; nil for none.
	Reporter Reporter
	// Observer receives every event Reporter does and the fine ones
	// (attempts, turns, tool calls, stops); nil for none (telemetry off:
	// the fine events are not even built).
	Observer Reporter
	// CLIEnv, when set, may change the environment of a job's CLI (it gets
	// the run id, the job's name and the environment pneuma built);
	// telemetry adds OTEL_RESOURCE_ATTRIBUTES and TRACEPARENT.
	CLIEnv func(runID, job string, env []string) []string
	// Keep says which worktrees stay after their job (default on-failure).
	Keep KeepPolicy
	// FailFast stops the run at the first failed job.
	FailFast bool
	// Kill, when closed, kills every job's process group at once (second Ctrl-C).
	Kill <-chan struct{}
	// StopGrace is the wait after each step of a graceful stop (default 2s).
	StopGrace time.Duration
	// ResultGrace is how long a CLI may take to exit after its final result
	// and the close of its stdin before it is stopped (default 5s).
	ResultGrace time.Duration
	// RetryBackoff is the base delay before a retry (default 5s); it doubles
	// per attempt, with jitter.
	RetryBackoff time.Duration
	// StderrLimit bounds each job's stderr.log (default 4 MiB).
	StderrLimit int
	// Environ is the environment the CLI processes inherit (default os.Environ()).
	Environ []string
	// Prices price the transcripts of jobs that ended without a result
	// (default: history's embedded table).
	Prices *history.PriceTable
	// Pool is how many clean worktrees per repository are kept after the
	// run, in PoolDir, for later runs to reuse instead of checking out
	// (and deleting) a whole tree again; negative means the plan's
	// concurrency. The spares a run finds there are reused first, and those
	// beyond Pool are removed at its end.
	Pool int
	// StormWindow is the window in which three 429/529 answers halve the
	// concurrency (default 30s); RecoverAfter is the calm after which it
	// rises again by one (default 30s).
	StormWindow  time.Duration
	RecoverAfter time.Duration
}

func (o *Options) defaults() {
	if o.Keep == "" {
		o.Keep = KeepOnFailure
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.ResultGrace <= 0 {
		o.ResultGrace = 5 * time.Second
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 5 * time.Second
	}
	if o.StderrLimit <= 0 {
		o.StderrLimit = 4 << 20
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Reporter == nil {
		o.Reporter = nopReporter{}
	}
	if o.Observer != nil {
		o.Reporter = teeReporter{o.Reporter, o.Observer}
	}
	if o.Git == nil {
		o.Git = worktree.New()
	}
	if o.StormWindow <= 0 {
		o.StormWindow = DefaultStormWindow
	}
	if o.RecoverAfter <= 0 {
		o.RecoverAfter = DefaultRecoverAfter
	}
	if o.Prices == nil {
		o.Prices = history.DefaultPrices()
	}
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

// cliEnv lets Options.CLIEnv change a job's CLI environment.
func (r *run) cliEnv(job string, env []string) []string {
	if r.opts.CLIEnv == nil {
		return env
	}
	return r.opts.CLIEnv(r.plan.RunID, job, env)
}

// run is the state of one Run call.
type run struct {
	plan    *Plan
	opts    Options
	journal *Journal
	git     *worktree.Manager
	tx      transcripts

	mu        sync.Mutex
	spent     float64
	nextStart time.Time
	// waveLeft counts the starts of the current wave still to be spaced
	// (see spaceStart).
	waveLeft int
	// parked holds, per repository, clean worktrees of finished jobs that
	// the next jobs reuse; what is left is removed at the end of the run.
	parked map[string][]parkedTree
	// warnings are the run's problems that failed no job.
	warnings []report.Warning
	// gate admits CLI starts (concurrency, usage-limit holds, reserve).
	gate *gate
	// rateLimit is the latest rate-limit state any job reported.
	rateLimit *claude.RateLimitInfo
	// heldWhy says why the gate stopped new jobs for good ("" while it
	// has not): the error of the jobs it kept from starting.
	heldWhy string
	// client, for a server session's run of one job, is where its
	// prompts come from; nil for a jobs-file run.
	client client
}

// parkedTree is a finished job's clean worktree, waiting for the next job.
type parkedTree struct {
	dir string
	// watch, when not nil, vouched at the end of the job that the tree is
	// still the checkout it was made as, and goes on watching it.
	watch *worktree.Watch
}

// Run executes the plan and returns its report. A failed job is a result, not
// an error: the error is for a run that could not happen at all (the run
// directory cannot be written). Cancelling ctx stops the run gracefully: no
// new job starts, running jobs are interrupted, their work is committed, and
// the report says interrupted. Unfinished jobs of a journal passed with
// resume are continued; finished ones are kept.
func Run(ctx context.Context, p *Plan, o Options) (*report.Report, error) {
	return run1(ctx, p, o, nil)
}

// Resume continues a run from its journal (after pneuma itself was killed,
// or a Ctrl-C): finished jobs keep their results, unfinished ones (and
// those an interrupt or fail-fast stopped) continue in their existing
// worktrees, resuming their CLI sessions where one was recorded.
func Resume(ctx context.Context, p *Plan, prior *Journal, o Options) (*report.Report, error) {
	return run1(ctx, p, o, prior)
}

func run1(ctx context.Context, p *Plan, o Options, prior *Journal) (*report.Report, error) {
	o.defaults()
	if err := os.MkdirAll(p.RunDir, 0o755); err != nil {
		return nil, &EnvError{fmt.Errorf("create run directory: %w", err)}
	}
	j, err := openJournal(p, prior)
	if err != nil {
		return nil, &EnvError{err}
	}
	j.startWriter()
	defer j.stopWriter()
	r := newRun(p, o, j)
	r.loadPool()
	for _, s := range j.Jobs {
		if s.State == StateFinished && s.Result != nil {
			r.spent += s.Result.CostUSD
		}
	}
	r.event(Event{Type: EventRunStarted, Jobs: len(p.Jobs)})
	results := r.schedule(ctx)
	r.settleParked(ctx)
	return r.conclude(ctx, results)
}

// newRun is the state of a run of p with options o (defaults applied)
// and journal j.
func newRun(p *Plan, o Options, j *Journal) *run {
	r := &run{plan: p, opts: o, journal: j, git: o.Git, tx: transcripts{prices: o.Prices}, waveLeft: p.Concurrency}
	if r.opts.Pool < 0 {
		r.opts.Pool = p.Concurrency
	}
	r.gate = newGate(p.Concurrency, o.StormWindow, o.RecoverAfter, func(limit int, reason string) {
		r.event(Event{Type: EventConcurrency, Concurrency: limit, Reason: reason})
	})
	return r
}

// schedule runs the plan's jobs, at most Concurrency at once, and returns
// their results in plan order. Jobs a resumed journal finished keep their
// results; once ctx ends (or fail-fast fires) no new job starts.
func (r *run) schedule(ctx context.Context) []report.Job {
	// runCtx ends on a signal (ctx) or on fail-fast; jobs see the cause.
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	results := make([]report.Job, len(r.plan.Jobs))
	g := new(errgroup.Group)
	g.SetLimit(r.plan.Concurrency)
	for i, job := range r.plan.Jobs {
		if st := r.journal.state(job.Name); st != nil && st.State == StateFinished && st.Result != nil {
			results[i] = *st.Result
			continue
		}
		if runCtx.Err() != nil {
			results[i] = r.skipped(job, stopReason(runCtx))
			r.finish(job, &results[i])
			continue
		}
		g.Go(func() error {
			if runCtx.Err() != nil {
				results[i] = r.skipped(job, stopReason(runCtx))
			} else {
				results[i] = r.runJob(runCtx, job)
			}
			r.finish(job, &results[i])
			if r.opts.FailFast && results[i].Status == report.StatusFailed {
				cancelRun(errFailFast)
			}
			return nil // a failed job is a result, not an error of the group
		})
	}
	_ = g.Wait() // every job returns nil
	return results
}

// conclude writes the run's report and final journal and tells the reporter.
func (r *run) conclude(ctx context.Context, results []report.Job) (*report.Report, error) {
	p := r.plan
	rep := &report.Report{Schema: report.Schema, RunID: p.RunID, StartedAt: r.journal.StartedAt, Shard: p.Shard,
		Jobs: results, Warnings: r.warnings, FinishedAt: time.Now().UTC(), RateLimit: reportRateLimit(r.latestRateLimit())}
	rep.Tally(ctx.Err() != nil)
	if p.BudgetUSD > 0 {
		rep.Budget = &report.Budget{CapUSD: p.BudgetUSD, SpentUSD: r.spentSoFar()}
	}
	if err := report.WriteJSON(RunReportPath(p), rep); err != nil {
		return rep, &EnvError{fmt.Errorf("write report: %w", err)}
	}
	r.journal.finish(rep)
	if err := r.journal.save(); err != nil {
		return rep, &EnvError{err}
	}
	r.opts.Reporter.Event(Event{Type: EventRunFinished, Time: time.Now(), RunID: p.RunID, Report: rep, SpentUSD: rep.Totals.CostUSD})
	return rep, nil
}

// RunReportPath is where Run writes report.json.
func RunReportPath(p *Plan) string { return RunDir(p.RunDir).Report() }

var errFailFast = errors.New("another job failed and --fail-fast is set")

// stopReason says why runCtx ended: a signal or fail-fast.
func stopReason(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errFailFast) {
		return report.ReasonFailFast
	}
	return report.ReasonInterrupted
}

// finish records a job's final result in the journal and tells the reporter.
func (r *run) finish(job *Job, res *report.Job) {
	final := *res // res changes below if the save fails; the journal's copy must not
	r.journal.update(job.Name, func(s *JobState) {
		s.State = StateFinished
		s.Result = &final
	})
	if err := r.journal.sync(); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	r.mu.Lock()
	spent := r.spent
	r.mu.Unlock()
	r.opts.Reporter.Event(Event{Type: EventJobFinished, Time: time.Now(), RunID: r.plan.RunID, Job: job.Name, Result: res, SpentUSD: spent, Reason: res.Reason})
}

func (r *run) skipped(job *Job, reason string) report.Job {
	res := r.baseResult(job)
	res.Status = report.StatusSkipped
	res.Reason = reason
	res.Worktree = ""
	res.Branch = ""
	return res
}

func (r *run) baseResult(job *Job) report.Job {
	return report.Job{
		Name:              job.Name,
		Position:          job.Position,
		Repo:              job.Repo,
		Base:              job.Base,
		Branch:            job.Branch,
		Worktree:          job.Dir,
		Model:             job.Options.Model,
		PermissionDenials: []report.PermissionDenial{},
	}
}

// park keeps a finished job's clean worktree for the next job of its repository.
func (r *run) park(repo string, t parkedTree) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parked == nil {
		r.parked = map[string][]parkedTree{}
	}
	r.parked[repo] = append(r.parked[repo], t)
}

// unpark takes a parked worktree of repo, if there is one.
func (r *run) unpark(repo string) (parkedTree, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	trees := r.parked[repo]
	if len(trees) == 0 {
		return parkedTree{}, false
	}
	t := trees[len(trees)-1]
	r.parked[repo] = trees[:len(trees)-1]
	return t, true
}

// loadPool parks the spare worktrees that earlier runs left in the pools of
// the plan's repositories, so that jobs reuse them first.
func (r *run) loadPool() {
	seen := map[string]bool{}
	for _, job := range r.plan.Jobs {
		if !job.UseWorktree || seen[job.Repo] {
			continue
		}
		seen[job.Repo] = true
		for _, dir := range RepoLayout(job.Repo).Spares() {
			r.park(job.Repo, parkedTree{dir: dir})
		}
	}
}

// loadSpare parks one spare worktree of job's repository's pool, for a
// server session (a run of one job) to reuse.
func (r *run) loadSpare(job *Job) {
	if !job.UseWorktree {
		return
	}
	if spares := RepoLayout(job.Repo).Spares(); len(spares) > 0 {
		r.park(job.Repo, parkedTree{dir: spares[0]})
	}
}

// settleParked keeps up to Pool of the worktrees no job reused as spares
// for the next run, and removes the others. Keeping them is what spares the
// end of a run from deleting a tree per job slot, seconds each on a big
// repository.
func (r *run) settleParked(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	emptied := map[string]bool{}
	for repo, trees := range r.parked {
		pool := RepoLayout(repo).Pool()
		kept := 0
		for _, t := range trees {
			closeWatch(t.watch) // retiring or removing the tree is no change to watch for
			if from := filepath.Dir(t.dir); from != pool {
				emptied[from] = true
			}
			if kept < r.opts.Pool && r.spare(ctx, repo, t.dir, pool) {
				kept++
				continue
			}
			r.removeTree(ctx, repo, t.dir)
		}
	}
	for dir := range emptied {
		_ = os.Remove(dir) // the run's worktree directory, if empty; one that is not holds kept work
	}
	r.parked = nil
}

// spare keeps a parked clean worktree in the pool, moving it there unless
// it is there already. It reports whether the tree is now a spare.
func (r *run) spare(ctx context.Context, repo, dir, pool string) bool {
	if filepath.Dir(dir) == pool {
		return true
	}
	// <run id>-<job>: unique, and says where it came from.
	to := filepath.Join(pool, filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir))
	return r.git.Retire(ctx, repo, dir, to, true) == nil
}

// removeTree removes a clean worktree. When that fails the tree stays, and
// the report says so with a warning that `pneuma clean` acts on.
func (r *run) removeTree(ctx context.Context, repo, dir string) {
	err := r.git.Remove(ctx, repo, dir)
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, report.Warning{
		Code:    report.WarnWorktreeNotRemoved,
		Message: fmt.Sprintf("could not remove the worktree %s (pneuma clean removes it): %v", dir, err),
		Path:    dir,
	})
}

// reserveStart takes a start slot from the gate (the caller releases it
// when the CLI has exited), then spaces the starts of a wave. It
// returns errHeld when a usage limit stopped the run, or ctx's error.
func (r *run) reserveStart(ctx context.Context) error {
	if err := r.gate.acquire(ctx, false); err != nil {
		return err
	}
	if !r.stagger(ctx) {
		r.gate.release()
		return ctx.Err()
	}
	return nil
}

// stagger spaces the starts of a wave by the plan's stagger and returns
// when this job may start, or false when ctx ended first.
func (r *run) stagger(ctx context.Context) bool {
	r.mu.Lock()
	wait, next, left := spaceStart(time.Now(), r.nextStart, r.waveLeft, r.plan.Stagger)
	r.nextStart, r.waveLeft = next, left
	r.mu.Unlock()
	return sleep(ctx, wait)
}

// sleep waits d and reports true, or false as soon as ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newWave spaces the next starts again, as at the run's start: the jobs
// held for a usage limit all start when it resets.
func (r *run) newWave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waveLeft = r.plan.Concurrency
}

// spaceStart decides when a CLI start may go. A wave (the first start of
// each of the run's slots, or the starts after a usage-limit hold) would
// start every CLI at the same instant: its starts are spaced by stagger,
// the first at once. Later starts follow jobs that end at their own pace
// and go at once; spacing them would throttle the steady state (at 100 ms,
// ten starts a second) for a race that docs/limits.md measured as harmless.
// next is the earliest time the next spaced start may go; waveLeft counts
// the starts of the wave still to come.
func spaceStart(now, next time.Time, waveLeft int, stagger time.Duration) (wait time.Duration, newNext time.Time, newLeft int) {
	if stagger <= 0 || waveLeft <= 0 {
		return 0, next, waveLeft
	}
	at := next
	if at.Before(now) {
		at = now
	}
	return at.Sub(now), at.Add(stagger), waveLeft - 1
}

// budgetLeft returns the money left under the run's cap (ok=false: spent).
// Without a cap it returns 0, true.
func (r *run) budgetLeft() (left float64, ok bool) {
	if r.plan.BudgetUSD <= 0 {
		return 0, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	left = r.plan.BudgetUSD - r.spent
	return left, left > 0.000001
}

func (r *run) addSpent(usd float64) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spent += usd
	return r.spent
}

func (r *run) spentSoFar() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spent
}

// childEnv builds a job's CLI environment: pneuma's own, without CLAUDECODE
// (set inside a Claude Code session, it would make the CLI think it is
// nested), plus the job's env.
func childEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDECODE" {
			continue
		}
		if _, ok := extra[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func envLookup(env []string) func(string) string {
	return func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}

// joinErr joins two error messages.
func joinErr(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// claudeUsage turns the CLI's model usage into report types and totals.
func claudeUsage(mu map[string]claude.ModelUsage, main claude.Usage) (report.Usage, map[string]report.ModelUsage) {
	if len(mu) == 0 {
		return main, nil
	}
	var u report.Usage
	out := make(map[string]report.ModelUsage, len(mu))
	for k, m := range mu {
		out[k] = report.ModelUsage(m)
		u.Add(usage.Tokens{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			CacheReadInputTokens: m.CacheReadInputTokens, CacheCreationInputTokens: m.CacheCreationInputTokens})
	}
	return u, out
}

// firstNonEmpty returns the first of vs that is not empty.
func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
