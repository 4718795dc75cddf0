package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/report"
)

// ContinuePrompt is sent when a retry resumes the session of a failed attempt.
const ContinuePrompt = "The previous attempt at this task was cut off by an error. Continue where you left off and finish the task."

// attempt is the outcome of one CLI process of a job.
type attempt struct {
	verdict
	result     *claude.Result
	sessionID  string
	model      string
	exit       claude.ExitStatus
	cost       float64
	estimated  bool
	usage      report.Usage
	modelUsage map[string]report.ModelUsage
	turns      int
	denials    []report.PermissionDenial
	rounds     []report.VerifyRound
	duration   time.Duration
	waited     time.Duration // for a start slot (stagger)
	cli        time.Duration // from spawning the CLI to its exit and drained stdout
	rateLimit  *claude.RateLimitInfo
	mcp        []claude.MCPServer
	permMode   string // the permission mode the CLI reported
	notices    notices
	// unstarted: the run stopped, or a usage limit closed it, while the
	// attempt waited for a start slot; no CLI ran.
	unstarted bool
}

// attempt runs the CLI once in the job's workspace; resume continues an
// earlier session. A job's attempt sends its prompts (ContinuePrompt when
// it resumes); a session's waits for its client's messages, unless cont
// says it continues after a usage-limit hold.
func (r *run) attempt(ctx context.Context, job *Job, rec *records, resume string, cont bool) (a attempt) {
	a.model = job.Options.Model
	start := time.Now()
	defer func() { a.duration = time.Since(start) }()

	opts, prompts := job.Options, job.Prompts
	if resume != "" {
		opts.Resume, prompts = resume, []string{ContinuePrompt}
		opts.ForkSession = job.ForkFrom != "" && resume == job.ForkFrom
	}
	if r.client != nil && (!cont || resume == "") {
		msgs, ok := r.client.wait(ctx)
		if !ok {
			a.unstarted = true // the session ended between turns
			return a
		}
		prompts = msgs
	}
	if !r.capBudget(&opts) {
		a.status, a.reason = report.StatusSkipped, report.ReasonBudget
		return a
	}
	env := r.cliEnv(job.Name, childEnv(r.opts.Environ, job.Env))
	// Before resuming, price what the transcript already holds, so that an
	// estimate for this attempt counts only its own calls.
	var before float64
	if resume != "" {
		before, _, _ = r.tx.estimate(ctx, env, job.Dir, resume) // no transcript: nothing before
	}

	waitStart := time.Now()
	if err := r.reserveStart(ctx); err != nil {
		a.status, a.reason, a.unstarted = report.StatusInterrupted, stopReason(ctx), true
		if errors.Is(err, errHeld) {
			a.status, a.reason, a.err = report.StatusFailed, report.ReasonUsageLimit, r.heldError()
		}
		return a
	}
	defer r.releaseStart()
	a.waited = time.Since(waitStart)
	r.observeStart(job.Name, a.waited)
	cliStart := time.Now()
	defer func() { a.cli = time.Since(cliStart) }()
	spec := cliSpec{
		binary: firstNonEmpty(job.Binary, r.plan.Binary), dir: job.Dir, env: env, opts: opts,
		policy: job.Policy, audit: rec.audit, stream: rec.stream, stderr: rec.stderr, stopGrace: r.opts.StopGrace,
	}
	if r.client != nil {
		spec.ask, spec.parts = r.client.asker(), true // clients get the CLI's lines as written
		r.client.switchedOptions(&spec.opts)
	}
	p, err := startCLI(ctx, spec)
	if err != nil {
		a.status, a.reason, a.err = report.StatusFailed, report.ReasonCLIError, err.Error()
		if r.client != nil {
			r.client.ended(&a, true)
		}
		return a
	}
	d := driver{r: r, job: job, p: p, prompts: prompts, env: env, audit: rec.audit, client: r.client, box: boxOf(ctx)}
	if r.client != nil {
		r.client.started(p)
		if box := boxOf(ctx); box != nil {
			r.client.sandboxed(sandboxReport(box))
		}
		defer func() { r.client.ended(&a, d.sent > d.results) }()
	}
	stopped := d.loop(ctx)
	a.exit, err = p.Wait()
	boxOf(ctx).SyncRefs() // the job's commits inside reach its branch
	a.settle(&d, stopped, err, rec.stderr)
	if resume != "" && resumeRejected(d.initSeen, stopped, a.status) {
		a.status, a.reason, a.sessionID = report.StatusFailed, report.ReasonResumeFailed, resume
		return a // nothing ran: no transcript to price
	}
	r.priceFromTranscript(ctx, &a, &d, env, job.Dir, before)
	return a
}

// settle fills the attempt from what its driver saw: verdict, session,
// turns, cost and usage as the CLI reported them.
func (a *attempt) settle(d *driver, stopped string, waitErr error, stderr *tailFile) {
	a.sessionID, a.turns, a.result, a.rounds = d.sessionID, d.turns, d.last, d.rounds
	a.model = firstNonEmpty(d.served, d.model, a.model)
	a.rateLimit, a.mcp, a.permMode, a.notices = d.rateLimit, d.mcp, d.permMode, d.notices
	a.verdict = classify(d.outcome(a.exit, stopped))
	for _, pd := range denials(d.last) {
		d.audit.denial(pd.ToolUseID)
		a.denials = append(a.denials, pd)
	}
	if waitErr != nil {
		a.err = joinErr(a.err, waitErr.Error())
	}
	if a.status != report.StatusSucceeded && d.last == nil {
		a.err = withStderr(a.err, stderr)
	}
	a.cost = d.maxCost
	a.usage, a.modelUsage = d.usage()
}

// priceFromTranscript estimates the cost of an attempt whose CLI reported
// none (killed, crashed, interrupted) from its transcript, less what the
// transcript held before the attempt.
func (r *run) priceFromTranscript(ctx context.Context, a *attempt, d *driver, env []string, dir string, before float64) {
	if (d.last != nil && d.last.TotalCostUSD != 0) || d.sessionID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cost, usage, err := r.tx.estimate(ctx, env, dir, d.sessionID)
	if err != nil || cost-before <= a.cost {
		return // no transcript to go by: the CLI's figure stands
	}
	a.cost, a.estimated = cost-before, true
	if d.costUsage == nil {
		a.usage = usage
	}
}

// withStderr adds the end of the CLI's stderr to an error message.
func withStderr(msg string, stderr *tailFile) string {
	if tail := strings.TrimSpace(stderr.Tail(600)); tail != "" {
		return joinErr(msg, "stderr: "+tail)
	}
	return msg
}

// errPolicy wraps a job policy that does not compile.
func errPolicy(err error) error { return fmt.Errorf("policy: %w", err) }
