package runner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/report"
)

// ContinuePrompt is sent when a retry resumes the session of a failed attempt.
const ContinuePrompt = "The previous attempt at this task was cut off by an error. Continue where you left off and finish the task."

// initializeTimeout bounds the CLI's answer to the initialize request.
const initializeTimeout = 30 * time.Second

// cleanupTimeout bounds the work after a job (commit, diff, archive) which
// runs even when the run is being interrupted.
const cleanupTimeout = 2 * time.Minute

// attempt is the outcome of one CLI process.
type attempt struct {
	status, reason, err string
	result              *claude.Result
	sessionID           string
	model               string
	exit                claude.ExitStatus
	cost                float64
	estimated           bool
	usage               report.Usage
	modelUsage          map[string]report.ModelUsage
	turns               int
	denials             []report.PermissionDenial
	rounds              []report.VerifyRound
	duration            time.Duration
	waited              time.Duration // for a start slot (stagger)
	cli                 time.Duration // from spawning the CLI to its exit and drained stdout
}

// runJob runs one job through its whole lifecycle and returns its result.
func (r *run) runJob(ctx context.Context, job *Job) report.Job {
	start := time.Now()
	res := r.baseResult(job)
	res.Stream = filepath.Join(job.JobDir, "stream.jsonl")
	prior := r.journal.state(job.Name)

	if _, ok := r.budgetLeft(); !ok {
		return r.skipped(job, report.ReasonBudget)
	}
	if err := os.MkdirAll(job.JobDir, 0o755); err != nil {
		res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonWorkspace, fmt.Sprintf("create job directory: %v", err)
		return res
	}
	t0 := time.Now()
	created, fresh, watch, err := r.prepareWorkspace(ctx, job, prior)
	res.Timings.WorktreeMS = time.Since(t0).Milliseconds()
	// A worktree made now is a clean checkout of the base: watch it (unless
	// the watch of the job it is reused from came along), so that if the
	// job changes nothing, nothing needs scanning afterwards.
	if err == nil && fresh && watch == nil {
		watch = r.opts.Workspace.WatchWorktree(job.Dir)
	}
	defer func() { closeWatch(watch) }() // unless parked with the worktree
	if err != nil {
		res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonWorkspace, err.Error()
		if !created {
			res.Worktree, res.Branch = "", ""
		}
		return res
	}
	r.journal.update(job.Name, func(s *JobState) {
		s.State = StateRunning
		s.WorktreeCreated = job.UseWorktree
		s.StartedAt = start.UTC()
	})
	r.journal.touch()
	r.opts.Reporter.Event(Event{Type: EventJobStarted, Time: time.Now(), RunID: r.plan.RunID, Job: job.Name, Branch: job.Branch, Worktree: job.Dir, SpentUSD: r.spentSoFar()})

	stream, err := os.OpenFile(res.Stream, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonWorkspace, fmt.Sprintf("open stream file: %v", err)
		return res
	}
	defer stream.Close()
	stderr, err := newTailFile(filepath.Join(job.JobDir, "stderr.log"), r.opts.StderrLimit)
	if err != nil {
		res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonWorkspace, err.Error()
		return res
	}
	defer stderr.Close()
	res.Audit = filepath.Join(job.JobDir, "audit.jsonl")
	aud, err := newAudit(res.Audit)
	if err != nil {
		res.Status, res.Reason, res.Error = report.StatusFailed, report.ReasonWorkspace, err.Error()
		return res
	}
	defer aud.close() // on early returns; the normal path closes it below and keeps the error

	sessionID := ""
	number := 0
	if prior != nil {
		sessionID = prior.SessionID
		number = len(prior.Attempts)
		res.Attempts = append(res.Attempts, prior.Attempts...)
		res.CostUSD = prior.SpentUSD
	}
	var last attempt
	for {
		number++
		if _, ok := r.budgetLeft(); !ok && number > 1 {
			last.reason = report.ReasonBudget
			break
		}
		resume := sessionID
		a := r.attempt(ctx, job, number, resume, stream, stderr, aud)
		last = a
		if a.sessionID != "" {
			sessionID = a.sessionID
		}
		spent := r.addSpent(a.cost)
		res.CostUSD += a.cost
		res.CostEstimated = res.CostEstimated || a.estimated
		addUsage(&res.Usage, a.usage)
		res.ModelUsage = mergeModelUsage(res.ModelUsage, a.modelUsage)
		res.NumTurns += a.turns
		res.PermissionDenials = append(res.PermissionDenials, a.denials...)
		res.Verify = append(res.Verify, a.rounds...)
		res.Timings.WaitMS += a.waited.Milliseconds()
		res.Timings.CLIMS += a.cli.Milliseconds()
		res.Attempts = append(res.Attempts, report.Attempt{
			Number: number, Status: a.status, Reason: a.reason, SessionID: a.sessionID,
			CostUSD: a.cost, CostEstimated: a.estimated, DurationMS: a.duration.Milliseconds(),
			ExitCode: a.exit.Code, Error: a.err,
		})
		r.journal.update(job.Name, func(s *JobState) {
			s.Attempt = number
			s.SessionID = sessionID
			s.SpentUSD = res.CostUSD
			s.Attempts = slices.Clone(res.Attempts) // runJob goes on writing res.Attempts
		})
		r.journal.touch()

		if a.status == report.StatusSucceeded || !retryable(a) || number > job.Retries || ctx.Err() != nil {
			break
		}
		if _, ok := r.budgetLeft(); !ok {
			break
		}
		delay := backoff(r.opts.RetryBackoff, number)
		r.opts.Reporter.Event(Event{Type: EventJobRetry, Time: time.Now(), RunID: r.plan.RunID, Job: job.Name, Attempt: number + 1, Reason: a.reason, DelayMS: delay.Milliseconds(), SpentUSD: spent})
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		if ctx.Err() != nil {
			break
		}
	}

	res.Status, res.Reason, res.Error = last.status, last.reason, last.err
	if last.status == "" { // budget ran out before a retry could start
		res.Status, res.Reason = report.StatusFailed, report.ReasonBudget
	}
	res.SessionID = sessionID
	aud.flush()
	res.ToolCalls, res.ToolDenials = aud.counts()
	res.Model = firstNonEmpty(last.model, res.Model)
	res.ExitCode = last.exit.Code
	if last.result != nil {
		res.Result = last.result.Result
	}
	if r.afterJob(ctx, job, &res, sessionID, watch) {
		watch = nil // parked with the worktree, for the next job
	}
	if err := aud.close(); err != nil {
		res.Error = joinErr(res.Error, err.Error())
	}
	res.DurationMS = time.Since(start).Milliseconds()
	// Model output and CLI errors can quote secrets; reports never carry them.
	res.Result, res.Error = redact.String(res.Result), redact.String(res.Error)
	for i := range res.Attempts {
		res.Attempts[i].Error = redact.String(res.Attempts[i].Error)
	}
	return res
}

// prepareWorkspace creates the job's worktree, or reuses it when a resumed
// run already made it. created says whether the worktree exists; fresh,
// that it was made now as a clean checkout of the job's base. watch, when
// not nil, is the watch of the finished job whose worktree was reused,
// carried over: it vouches for the new checkout already.
func (r *run) prepareWorkspace(ctx context.Context, job *Job, prior *JobState) (created, fresh bool, watch WorktreeWatch, err error) {
	if !job.UseWorktree {
		return false, false, nil, nil
	}
	if prior != nil && prior.WorktreeCreated {
		if _, err := os.Stat(job.Dir); err == nil {
			return true, false, nil, nil
		}
	}
	ws := r.opts.Workspace
	if err := ws.Exclude(job.Repo, "/.pneuma/"); err != nil {
		return false, false, nil, fmt.Errorf("exclude .pneuma in %s: %w", job.Repo, err)
	}
	if err := os.MkdirAll(filepath.Dir(job.Dir), 0o755); err != nil {
		return false, false, nil, fmt.Errorf("create worktree directory: %w", err)
	}
	if from, ok := r.unpark(job.Repo); ok {
		// Asked again now: the watch saw whatever happened while it waited.
		untouched := from.watch != nil && from.watch.Untouched()
		if err := ws.ReuseWorktree(ctx, job.Repo, from.dir, job.Dir, job.Branch, job.BaseCommit, untouched); err == nil {
			if untouched && from.watch.Rearm(job.Dir) {
				return true, true, from.watch, nil
			}
			closeWatch(from.watch)
			return true, true, nil, nil
		}
		closeWatch(from.watch)
		// Could not reuse it (dirty since, moved away...): remove it if
		// it is clean (Remove refuses otherwise) and create afresh.
		_ = ws.Remove(context.WithoutCancel(ctx), job.Repo, from.dir)
	}
	if err := ws.CreateWorktree(ctx, job.Repo, job.Dir, job.Branch, job.BaseCommit); err != nil {
		return false, false, nil, fmt.Errorf("create worktree for job %q: %w", job.Name, err)
	}
	return true, true, nil, nil
}

// attempt runs the CLI once. resume continues an earlier session.
func (r *run) attempt(ctx context.Context, job *Job, number int, resume string, stream *os.File, stderr *tailFile, aud *audit) (a attempt) {
	a.model = job.Options.Model
	start := time.Now()
	defer func() { a.duration = time.Since(start) }()

	opts := job.Options
	prompts := job.Prompts
	if resume != "" {
		opts.Resume = resume
		prompts = []string{ContinuePrompt}
	}
	if left, capped := r.budgetCap(); capped && (opts.MaxBudgetUSD == 0 || opts.MaxBudgetUSD > left) {
		// Down to a hundredth of a cent, so float noise never lifts the cap.
		opts.MaxBudgetUSD = math.Floor(left*1e4+1e-6) / 1e4
		if opts.MaxBudgetUSD <= 0 {
			a.status, a.reason = report.StatusSkipped, report.ReasonBudget
			return a
		}
	}
	env := childEnv(r.opts.Environ, job.Env)

	// Before resuming, price what the transcript already holds, so that an
	// estimate for this attempt counts only its own calls.
	var before float64
	if resume != "" && r.opts.Estimator != nil {
		if f, err := r.opts.Estimator.SessionFile(r.opts.Estimator.ConfigDir(envLookup(env)), job.Dir, resume); err == nil {
			before, _, _ = r.opts.Estimator.Estimate(ctx, f)
		}
	}

	var onControl func(context.Context, *claude.ControlRequest) claude.ControlResponse
	if job.Policy != nil {
		pol, errs := policy.Compile(*job.Policy)
		if len(errs) > 0 {
			a.status, a.reason, a.err = report.StatusFailed, report.ReasonCLIError, fmt.Sprintf("policy: %v", errs[0])
			return a
		}
		// Permission prompts come to pneuma instead of being refused.
		opts.PermissionPromptStdio = true
		onControl = (&controller{pol: pol, cwd: job.Dir, audit: aud}).onControl
	}

	waitStart := time.Now()
	if !r.reserveStart(ctx) {
		a.status, a.reason = report.StatusInterrupted, stopReason(ctx)
		return a
	}
	a.waited = time.Since(waitStart)
	cliStart := time.Now()
	defer func() { a.cli = time.Since(cliStart) }()
	p, err := claude.Start(ctx, claude.Config{
		Binary:    firstNonEmpty(job.Binary, r.plan.Binary),
		Dir:       job.Dir,
		Env:       env,
		Options:   opts,
		Stream:    stream,
		Stderr:    stderr,
		OnControl: onControl,
	})
	if err != nil {
		a.status, a.reason, a.err = report.StatusFailed, report.ReasonCLIError, err.Error()
		return a
	}
	if job.Policy != nil {
		// The hook must be registered before the first prompt.
		ictx, cancel := context.WithTimeout(ctx, initializeTimeout)
		_, err := p.Initialize(ictx, policyHooks())
		cancel()
		if err != nil {
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 4*r.opts.StopGrace+5*time.Second)
			_ = p.Stop(sctx, r.opts.StopGrace)
			scancel()
			a.exit, _ = p.Wait()
			a.status, a.reason = report.StatusFailed, report.ReasonCLIError
			a.err = fmt.Sprintf("register the policy hook: %v", err)
			if tail := strings.TrimSpace(stderr.Tail(600)); tail != "" {
				a.err = joinErr(a.err, "stderr: "+tail)
			}
			return a
		}
	}

	d := driver{r: r, job: job, p: p, prompts: prompts, env: env, audit: aud}
	stopReason := d.loop(ctx)
	exit, werr := p.Wait()
	a.exit = exit
	a.sessionID = d.sessionID
	a.turns = d.turns
	a.result = d.last
	a.rounds = d.rounds
	if d.model != "" {
		a.model = d.model
	}
	classify(&a, d, stopReason)
	if werr != nil {
		a.err = joinErr(a.err, werr.Error())
	}
	if a.status != report.StatusSucceeded && d.last == nil {
		if tail := strings.TrimSpace(stderr.Tail(600)); tail != "" {
			a.err = joinErr(a.err, "stderr: "+tail)
		}
	}

	// Cost: the CLI's cumulative total_cost_usd (the largest seen, since an
	// interrupted turn reports 0), or the transcript when no turn finished.
	if d.maxCost > 0 {
		a.cost = d.maxCost
	}
	if d.costUsage != nil {
		a.usage, a.modelUsage = claudeUsage(d.costUsage.ModelUsage, d.costUsage.Usage)
	}
	if (d.last == nil || d.last.TotalCostUSD == 0) && d.sessionID != "" && r.opts.Estimator != nil {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if f, err := r.opts.Estimator.SessionFile(r.opts.Estimator.ConfigDir(envLookup(env)), job.Dir, d.sessionID); err == nil {
			if cost, usage, err := r.opts.Estimator.Estimate(cleanup, f); err == nil && cost-before > a.cost {
				a.cost = cost - before
				a.estimated = true
				if d.costUsage == nil {
					a.usage = usage
				}
			}
		}
	}
	return a
}

// budgetCap returns what is left under the run's cap and whether there is one.
func (r *run) budgetCap() (float64, bool) {
	if r.plan.BudgetUSD <= 0 {
		return 0, false
	}
	left, _ := r.budgetLeft()
	return left, true
}

// driver reads one CLI process's events and decides when to stop it.
type driver struct {
	r       *run
	job     *Job
	p       *claude.Process
	prompts []string

	sent      int  // prompts sent
	results   int  // results received
	final     bool // the result that ends the session has arrived
	last      *claude.Result
	costUsage *claude.Result // the result that carried the largest cost
	maxCost   float64
	sessionID string
	model     string
	turns     int
	invalid   int
	oversized int

	audit    *audit
	env      []string             // the CLI's environment, for the verify command
	rounds   []report.VerifyRound // verification rounds so far
	costMark float64              // cumulative cost at the last verification
}

// What the loop does after an event.
type action int

const (
	actNone   action = iota
	actFinal         // the session's last result is in: close stdin
	actVerify        // the agent's turn is done: run the verify command
)

// loop sends the prompts, reads events until stdout ends, and stops the
// process on a timeout, an idle stream, a lingering exit or ctx's end. It
// returns why pneuma stopped the process ("" when the CLI ended by itself).
func (d *driver) loop(ctx context.Context) string {
	events := d.p.Events()
	if err := d.p.SendUser(d.prompts[0]); err != nil {
		// The process may already have died; its stdout says why.
		d.sent = 0
	} else {
		d.sent = 1
	}

	var stopped string
	stopDone := make(chan struct{})
	stopping := false
	stop := func(reason string) {
		if stopping {
			return
		}
		stopping, stopped = true, reason
		go func() {
			defer close(stopDone)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 4*d.r.opts.StopGrace+5*time.Second)
			defer cancel()
			_ = d.p.Stop(sctx, d.r.opts.StopGrace)
		}()
	}
	defer func() {
		if stopping {
			<-stopDone
		}
	}()

	timeout := timerOrNil(d.job.Timeout)
	idle := timerOrNil(d.job.IdleTimeout)
	var linger *time.Timer
	defer func() { stopTimers(timeout, idle, linger) }()
	kill := d.r.opts.Kill
	done := ctx.Done()
	var verifyC chan report.VerifyRound
	var verifying sync.WaitGroup
	verifyCtx, cancelVerify := context.WithCancel(ctx)
	defer func() {
		cancelVerify()
		verifying.Wait()
	}()

	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return stopped
			}
			if idle != nil && verifyC == nil {
				idle.Reset(d.job.IdleTimeout)
			}
			switch act := d.handle(ev); {
			case stopping:
			case act == actFinal:
				// The last result is in: end the session gracefully.
				_ = d.p.CloseInput()
				if linger == nil {
					linger = time.NewTimer(d.r.opts.ResultGrace)
				}
			case act == actVerify:
				// The CLI waits quietly while the command runs: no idle timeout.
				if idle != nil {
					idle.Stop()
				}
				verifyC = make(chan report.VerifyRound, 1)
				round := len(d.rounds) + 1
				verifying.Add(1)
				go func(c chan<- report.VerifyRound) {
					defer verifying.Done()
					c <- runVerify(verifyCtx, d.job.Verify, d.job.Dir, d.env, round)
				}(verifyC)
			}
		case vr := <-verifyC:
			verifyC = nil
			if idle != nil {
				idle.Reset(d.job.IdleTimeout)
			}
			if d.verified(vr) == actFinal && !stopping {
				_ = d.p.CloseInput()
				if linger == nil {
					linger = time.NewTimer(d.r.opts.ResultGrace)
				}
			}
		case <-timerC(timeout):
			stop(report.ReasonTimeout)
		case <-timerC(idle):
			stop(report.ReasonIdleTimeout)
		case <-timerC(linger):
			// Hung after its result: stop it the same way, keep the result.
			stop("linger")
		case <-done:
			done = nil
			stop(stopReason(ctx))
		case <-kill:
			kill = nil
			_ = d.p.Kill()
		}
	}
}

// handle updates the driver with one event and says what the loop must do.
func (d *driver) handle(ev claude.Event) action {
	switch ev.Type {
	case "invalid":
		d.invalid++
	case "oversized":
		d.oversized++
	case "system":
		switch {
		case ev.Init != nil:
			if ev.Init.SessionID != "" && ev.Init.SessionID != d.sessionID {
				d.sessionID = ev.Init.SessionID
				// Record it now: if pneuma is killed, --resume continues it.
				d.r.journal.update(d.job.Name, func(s *JobState) { s.SessionID = d.sessionID })
				d.r.journal.touch()
			}
			d.model = firstNonEmpty(ev.Init.Model, d.model)
		case ev.Retry != nil:
			d.r.opts.Reporter.Event(Event{
				Type: EventAPIRetry, Time: time.Now(), RunID: d.r.plan.RunID, Job: d.job.Name,
				Attempt: ev.Retry.Attempt, DelayMS: int64(ev.Retry.RetryDelayMS), ErrorStatus: ev.Retry.ErrorStatus,
				Reason: ev.Retry.Error, SpentUSD: d.r.spentSoFar(),
			})
		}
	case "assistant", "user":
		d.audit.event(ev)
	case "result":
		if ev.Result == nil || d.final {
			// After the final result, a stop may make the CLI write another
			// (interrupted) one: the job's outcome is the first.
			return actNone
		}
		d.results++
		d.last = ev.Result
		d.sessionID = firstNonEmpty(ev.Result.SessionID, d.sessionID)
		d.turns += ev.Result.NumTurns
		// total_cost_usd is cumulative per process in this mode: keep the
		// largest, never sum.
		if ev.Result.TotalCostUSD >= d.maxCost {
			d.maxCost = ev.Result.TotalCostUSD
			d.costUsage = ev.Result
		}
		if !ev.Result.IsError && d.results < len(d.prompts) && d.sent < len(d.prompts) {
			if err := d.p.SendUser(d.prompts[d.sent]); err == nil {
				d.sent++
				return actNone
			}
		}
		if !ev.Result.IsError && d.job.Verify != nil && d.sent >= len(d.prompts) {
			return actVerify
		}
		d.final = true
		return actFinal
	}
	return actNone
}

// verified records a verification round and says what comes next: another
// turn for the agent (the follow-up was sent) or the end of the session.
func (d *driver) verified(vr report.VerifyRound) action {
	vr.CostUSD = max(d.maxCost-d.costMark, 0)
	d.costMark = d.maxCost
	d.rounds = append(d.rounds, vr)
	if vr.Passed || len(d.rounds) >= d.job.Verify.attempts() {
		d.final = true
		return actFinal
	}
	if err := d.p.SendUser(verifyFollowUp(vr)); err != nil {
		d.final = true
		return actFinal
	}
	return actNone
}

// classify sets a's status, reason and error from the last result, the exit
// status and why pneuma stopped the process (reference pitfall 8 and 11).
func classify(a *attempt, d driver, stopped string) {
	res := d.last
	complete := res != nil && !res.IsError && d.results >= len(d.prompts)
	if res != nil {
		for _, pd := range res.PermissionDenials {
			d.audit.denial(pd.ToolUseID)
			a.denials = append(a.denials, report.PermissionDenial{ToolName: pd.ToolName, ToolUseID: pd.ToolUseID, ToolInput: pd.ToolInput})
		}
	}
	if complete && d.job.Verify != nil {
		// Verification decides only when its loop ended (passed or out of
		// attempts); a stop in the middle is classified by its reason below.
		switch n := len(d.rounds); {
		case n == 0 || !d.final:
			complete = false
		case d.rounds[n-1].Passed:
			a.status = report.StatusSucceeded
			return
		default:
			last := d.rounds[n-1]
			a.status, a.reason = report.StatusFailed, report.ReasonVerifyFailed
			a.err = fmt.Sprintf("verification `%s` still failed after %d round(s) (exit code %d)", strings.Join(last.Command, " "), n, last.ExitCode)
			return
		}
	}
	switch {
	case complete:
		a.status = report.StatusSucceeded
		return
	case stopped == report.ReasonTimeout || stopped == report.ReasonIdleTimeout:
		a.status, a.reason = report.StatusFailed, stopped
		a.err = fmt.Sprintf("stopped after %s", map[string]string{
			report.ReasonTimeout:     "the job's timeout (" + d.job.Timeout.String() + ")",
			report.ReasonIdleTimeout: "no output for the job's idle_timeout (" + d.job.IdleTimeout.String() + ")",
		}[stopped])
		return
	case stopped == report.ReasonInterrupted || stopped == report.ReasonFailFast:
		a.status, a.reason = report.StatusInterrupted, stopped
		return
	case res == nil:
		a.status, a.reason = report.StatusFailed, report.ReasonNoResult
		a.err = fmt.Sprintf("the CLI exited (%s) without a result", exitText(a.exit))
		if d.invalid > 0 {
			a.err += fmt.Sprintf("; %d stdout lines were not JSON", d.invalid)
		}
		return
	}
	a.status = report.StatusFailed
	a.err = strings.Join(res.Errors, "; ")
	switch {
	case res.Subtype == "error_max_turns":
		a.reason = report.ReasonMaxTurns
	case res.Subtype == "error_max_budget_usd":
		a.reason = report.ReasonMaxBudget
	case res.Subtype == "success" && res.IsError:
		// API errors are subtype success + is_error (pitfall 8).
		a.reason = report.ReasonAPIError
		a.err = joinErr(res.Result, a.err)
	case !res.IsError:
		// A result that was not the last prompt's: the CLI stopped early.
		a.reason = report.ReasonNoResult
		a.err = fmt.Sprintf("the CLI exited (%s) after %d of %d prompts", exitText(a.exit), d.results, len(d.prompts))
	default:
		a.reason = report.ReasonCLIError
		if a.err == "" {
			a.err = res.Result
		}
	}
	if a.err == "" {
		a.err = res.Subtype
	}
}

// retryable reports whether a failed attempt may succeed if tried again.
func retryable(a attempt) bool {
	switch a.reason {
	case report.ReasonNoResult, report.ReasonIdleTimeout:
		return true
	case report.ReasonAPIError:
		if a.result == nil || a.result.APIErrorStatus == nil {
			return true // 529 overloaded carries no status
		}
		s := *a.result.APIErrorStatus
		return s >= 500 || s == 429
	}
	return false
}

// backoff is base·2^(n-1) with ±25% jitter, capped at 5 minutes.
func backoff(base time.Duration, n int) time.Duration {
	d := base << min(n-1, 10)
	if d > 5*time.Minute || d <= 0 {
		d = 5 * time.Minute
	}
	jitter := time.Duration(rand.Int64N(int64(d)/2+1)) - d/4
	return d + jitter
}

// afterJob keeps the job's work: commits leftovers on its branch, records
// what changed, archives the transcript, and removes the worktree when the
// keep policy allows and nothing uncommitted is in it. It runs even when the
// run is being interrupted, on a context of its own. watch, when not nil,
// may vouch that the worktree is untouched since it was checked out at the
// base: then there is nothing to commit or diff, and no file is read, and
// the watch is parked with the worktree (parked reports that: the caller
// must not close it then).
func (r *run) afterJob(ctx context.Context, job *Job, res *report.Job, sessionID string, watch WorktreeWatch) (parked bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ws := r.opts.Workspace

	t := time.Now()
	lap := func(ms *int64) {
		now := time.Now()
		*ms += now.Sub(t).Milliseconds()
		t = now
	}
	// clean is true when the worktree is known to hold no uncommitted work
	// (everything was just committed and the CLI and its tools are gone).
	clean := false
	// untouched: the worktree is still the checkout of the base it was
	// made as (its files, index, HEAD and branch).
	untouched := job.UseWorktree && watch != nil && watch.Untouched()
	if job.UseWorktree {
		head := ""
		if untouched {
			head, clean = job.BaseCommit, true
		} else if job.Commit {
			msg := fmt.Sprintf("pneuma: %s (%s)\n\nWork left uncommitted by job %q of run %s, committed by pneuma.\nStatus: %s%s\n",
				job.Name, res.Status, job.Name, r.plan.RunID, res.Status, reasonSuffix(res.Reason))
			if sha, _, err := ws.CommitAll(ctx, job.Dir, msg); err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("commit leftover changes: %v", err))
			} else {
				head, clean = sha, true
			}
			lap(&res.Timings.CommitMS)
		}
		if head == "" {
			var err error
			if head, err = ws.Head(ctx, job.Dir); err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("read head: %v", err))
			}
		}
		if head != "" {
			if head != job.BaseCommit {
				res.Commit = head
				files, ins, del, err := ws.DiffStat(ctx, job.Dir, job.BaseCommit, head)
				if err != nil {
					res.Error = joinErr(res.Error, fmt.Sprintf("diff stat: %v", err))
				}
				res.FilesChanged, res.Insertions, res.Deletions = files, ins, del
			}
			// An empty diff.patch says "no changes" as plainly as a diff would.
			if err := r.writePatch(ctx, job, head); err != nil {
				res.Error = joinErr(res.Error, err.Error())
			}
		}
		lap(&res.Timings.DiffMS)
	} else if head, err := ws.Head(ctx, job.Dir); err == nil && head != job.BaseCommit {
		res.Commit = head
		res.FilesChanged, res.Insertions, res.Deletions, _ = ws.DiffStat(ctx, job.Dir, job.BaseCommit, head)
	}

	if sessionID != "" && r.opts.Estimator != nil {
		env := childEnv(r.opts.Environ, job.Env)
		file, err := r.opts.Estimator.SessionFile(r.opts.Estimator.ConfigDir(envLookup(env)), job.Dir, sessionID)
		if err == nil {
			dst := filepath.Join(job.JobDir, "transcript")
			if err := r.opts.Estimator.Archive(ctx, file, dst); err != nil {
				res.Error = joinErr(res.Error, fmt.Sprintf("archive transcript: %v", err))
			} else {
				res.Transcript = filepath.Join(dst, filepath.Base(file))
			}
		}
		lap(&res.Timings.ArchiveMS)
	}

	if job.UseWorktree && r.removeWorktree(res) {
		// A worktree with uncommitted work stays. A clean one is parked for
		// the next job of the repository (or removed at the end of the run).
		if clean {
			t := parkedTree{dir: job.Dir}
			if untouched {
				t.watch, parked = watch, true
			}
			r.park(job.Repo, t)
			res.Worktree = ""
		} else if dirty, err := ws.Status(ctx, job.Dir); err == nil && len(dirty) == 0 {
			r.park(job.Repo, parkedTree{dir: job.Dir})
			res.Worktree = ""
		} else if err != nil {
			res.Error = joinErr(res.Error, fmt.Sprintf("check worktree before removing it: %v", err))
		}
		lap(&res.Timings.RemoveMS)
	}
	return parked
}

func (r *run) removeWorktree(res *report.Job) bool {
	switch r.opts.Keep {
	case KeepAlways:
		return false
	case KeepNever:
		return true
	}
	return res.Status == report.StatusSucceeded
}

func (r *run) writePatch(ctx context.Context, job *Job, head string) error {
	path := filepath.Join(job.JobDir, "diff.patch")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write diff.patch: %w", err)
	}
	if head != job.BaseCommit {
		err = r.opts.Workspace.WriteDiff(ctx, job.Dir, job.BaseCommit, head, f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write diff.patch: %w", err)
	}
	return nil
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

func exitText(e claude.ExitStatus) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

func addUsage(dst *report.Usage, u report.Usage) {
	dst.InputTokens += u.InputTokens
	dst.OutputTokens += u.OutputTokens
	dst.CacheReadInputTokens += u.CacheReadInputTokens
	dst.CacheCreationInputTokens += u.CacheCreationInputTokens
}

func mergeModelUsage(dst, src map[string]report.ModelUsage) map[string]report.ModelUsage {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]report.ModelUsage{}
	}
	for k, v := range src {
		m := dst[k]
		m.InputTokens += v.InputTokens
		m.OutputTokens += v.OutputTokens
		m.CacheReadInputTokens += v.CacheReadInputTokens
		m.CacheCreationInputTokens += v.CacheCreationInputTokens
		m.CostUSD += v.CostUSD
		dst[k] = m
	}
	return dst
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func timerOrNil(d time.Duration) *time.Timer {
	if d <= 0 {
		return nil
	}
	return time.NewTimer(d)
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func stopTimers(ts ...*time.Timer) {
	for _, t := range ts {
		if t != nil {
			t.Stop()
		}
	}
}
