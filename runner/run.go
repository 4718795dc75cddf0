// Package runner runs a plan of Claude Code jobs: it builds the plan from a
// decoded jobs file (package jobfile), schedules jobs concurrently, drives
// each job's CLI process through its lifecycle (workspace, stream, timeouts,
// retries, commit, archive) and produces the run report; a server session
// runs through the same engine. It writes only to the run directory and to
// the interfaces it is given; it never touches os.Stdout.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/usage"
	"github.com/pneuma-cli/pneuma/worktree"
)

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
	// Gate, when set, is shared with the other runs and the sessions of a
	// server: a 429/529 storm any of them meets slows them all.
	Gate *SharedGate
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

// run is the state of one Run call.
type run struct {
	plan    *Plan
	opts    Options
	journal *Journal
	git     *worktree.Manager
	tx      transcripts

	mu    sync.Mutex
	spent float64
	// totals count the finished jobs (their results live in the
	// journal's store, not here).
	totals    report.Totals
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
	// shared, when set (Options.Gate), is the gate of the server the run
	// belongs to: each CLI start takes a slot of it as well, and a storm
	// counts on it as well.
	shared *gate
	// rateLimit is the latest rate-limit state any job reported.
	rateLimit *claude.RateLimitInfo
	// heldWhy says why the gate stopped new jobs for good ("" while it
	// has not): the error of the jobs it kept from starting.
	heldWhy string
	// client, for a server session's run of one job, is where its
	// prompts come from; nil for a jobs-file run.
	client client
	// idents are the git identities of sandboxed jobs' repositories.
	idents identities
	// excluded holds the repositories whose info/exclude this run has
	// made sure keeps .pneuma out of git's sight (a repository's string).
	excluded sync.Map
}

// Run executes the plan and returns its report. A failed job is a result, not
// an error: the error is for a run that could not happen at all (the run
// directory cannot be written). Cancelling ctx stops the run gracefully: no
// new job starts, running jobs are interrupted, their work is committed, and
// the report says interrupted. Unfinished jobs of a journal passed with
// resume are continued; finished ones are kept.
func Run(ctx context.Context, p *Plan, o Options) (*report.Report, error) {
	return runPlan(ctx, p, o, nil)
}

// Resume continues a run from its journal (after pneuma itself was killed,
// or a Ctrl-C): finished jobs keep their results, unfinished ones (and
// those an interrupt or fail-fast stopped) continue in their existing
// worktrees, resuming their CLI sessions where one was recorded.
func Resume(ctx context.Context, p *Plan, prior *Journal, o Options) (*report.Report, error) {
	return runPlan(ctx, p, o, prior)
}

// runPlan runs p, resuming from prior when it is not nil: Run and Resume.
func runPlan(ctx context.Context, p *Plan, o Options, prior *Journal) (*report.Report, error) {
	o.defaults()
	if err := os.MkdirAll(p.RunDir, 0o755); err != nil {
		return nil, &EnvError{fmt.Errorf("create run directory: %w", err)}
	}
	j, err := openJournal(p, prior)
	if err != nil {
		return nil, &EnvError{err}
	}
	carried, err := j.storeResults(RunDir(p.RunDir).Results())
	if err != nil {
		return nil, &EnvError{err}
	}
	defer j.closeResults()
	j.startWriter()
	defer j.stopWriter()
	r := newRun(p, o, j)
	r.loadPool()
	r.spent, r.totals = carried.CostUSD, carried
	r.event(Event{Type: EventRunStarted, Jobs: len(p.Jobs)})
	r.schedule(ctx)
	r.settleParked(ctx)
	return r.conclude(ctx)
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
	if o.Gate != nil {
		r.shared = o.Gate.g
	}
	return r
}

// schedule runs the plan's jobs, at most Concurrency at once; each result
// goes to the journal (finish), none stays here. Jobs a resumed journal
// finished keep their results; once ctx ends (or fail-fast fires) no new
// job starts.
func (r *run) schedule(ctx context.Context) {
	// runCtx ends on a signal (ctx) or on fail-fast; jobs see the cause.
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	g := new(errgroup.Group)
	g.SetLimit(r.plan.Concurrency)
	for _, job := range r.plan.Jobs {
		if st := r.journal.state(job.Name); st != nil && st.Done() {
			continue
		}
		if runCtx.Err() != nil {
			res := r.skipped(job, stopReason(runCtx))
			r.finished(job, &res)
			continue
		}
		g.Go(func() error {
			var res report.Job
			if runCtx.Err() != nil {
				res = r.skipped(job, stopReason(runCtx))
			} else {
				res = r.runJob(runCtx, job)
			}
			r.finished(job, &res)
			if r.opts.FailFast && res.Status == report.StatusFailed {
				cancelRun(errFailFast)
			}
			return nil // a failed job is a result, not an error of the group
		})
	}
	_ = g.Wait() // every job returns nil
}

// conclude writes the run's report and final journal, one job at a time
// from the journal's store, and tells the reporter. The report it returns
// reads its jobs from report.json.
func (r *run) conclude(ctx context.Context) (*report.Report, error) {
	p := r.plan
	r.mu.Lock()
	head := report.Report{Schema: report.Schema, RunID: p.RunID, StartedAt: r.journal.StartedAt, Shard: p.Shard,
		Totals: r.totals, Warnings: r.warnings, FinishedAt: time.Now().UTC(), RateLimit: reportRateLimit(r.rateLimit)}
	r.mu.Unlock()
	head.Status = head.Totals.RunStatus(ctx.Err() != nil)
	if p.BudgetUSD > 0 {
		head.Budget = &report.Budget{CapUSD: p.BudgetUSD, SpentUSD: r.spentSoFar()}
	}
	path := RunReportPath(p)
	rep := report.StreamedEncoded(head, r.journal.eachResult, r.journal.eachEncoded)
	if err := report.WriteJSON(path, rep); err != nil {
		return loadedOrHead(rep), &EnvError{fmt.Errorf("write report: %w", err)}
	}
	rep = report.StreamFile(head, path)
	r.journal.finish(head.Status)
	if err := r.journal.save(); err != nil {
		return rep, &EnvError{err}
	}
	r.opts.Reporter.Event(Event{Type: EventRunFinished, Time: time.Now(), RunID: p.RunID, Report: rep, SpentUSD: rep.Totals.CostUSD})
	return rep, nil
}

// loadedOrHead is a report whose jobs could not be written to report.json,
// read into memory before their store goes (or without them, when even
// that fails: the journal still holds them).
func loadedOrHead(rep *report.Report) *report.Report {
	if l, err := rep.Load(); err == nil {
		return l
	}
	head := *rep
	return report.Streamed(head, func(func(*report.Job) error) error { return errors.New("the report's jobs could not be read") })
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

// finished records a job's final result in the journal and tells the reporter.
func (r *run) finished(job *Job, res *report.Job) {
	final := *res // res changes below if the save fails; the journal's copy must not
	r.journal.update(job.Name, func(s *JobState) {
		s.State = StateFinished
		s.Result = &final
	})
	if err := r.journal.sync(); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	// Its state is in the log: its result leaves memory for the store.
	_ = r.journal.settle(job.Name) // when it cannot be stored, it stays in memory: nothing is lost
	r.mu.Lock()
	r.totals.Add(&final)
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
