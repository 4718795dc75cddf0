package runner

import (
	"context"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/sandbox"
)

// driver runs one attempt's CLI process: it sends the prompts one turn
// after another, runs the verification stage between turns, and decides when
// to stop the process. A job's prompts are its own; a server session's come
// from its client (client not nil), one turn per message, for as long as
// the session is open. Everything else is the same for both.
type driver struct {
	r       *run
	job     *Job
	p       *claude.Process
	prompts []string // the prompts to send (a session's grow as messages come)
	audit   *audit
	env     []string     // the CLI's environment, for the verify command
	client  client       // a server session's client; nil for a job
	box     *sandbox.Box // the job's sandbox (nil: none)

	tally
	sent     int  // prompts sent
	final    bool // the result that ends the session has arrived (it is tally.last)
	rounds   []report.VerifyRound
	costMark float64 // cumulative cost at the last verification
}

// loop sends the first prompt, reads events until stdout ends, and stops the
// process on a timeout, an idle stream, a lingering exit or ctx's end. It
// returns why pneuma stopped the process ("" when the CLI ended by itself).
func (d *driver) loop(ctx context.Context) string {
	var mcpC <-chan []claude.MCPServer
	if d.job.Expect != nil && d.job.Expect.MCP {
		m := startMCPCheck(ctx, d.p) // the first prompt waits for its answer
		defer m.close()
		mcpC = m.c
	}
	st := &stopper{p: d.p, grace: d.r.opts.StopGrace, onStop: d.r.stopObserver(d.job.Name)}
	defer st.wait()
	t := newJobTimers(d.job.Timeout, d.job.IdleTimeout, d.client != nil)
	defer t.stop()
	if mcpC == nil {
		d.sendFirst(t)
	}
	v := newVerifier(ctx, d.job.Verify, d.job.Dir, d.env)
	defer v.close()

	var more <-chan struct{}
	if d.client != nil {
		more = d.client.more()
	}
	events, done, kill := d.p.Events(), ctx.Done(), d.r.opts.Kill
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return st.reason
			}
			if !v.running() {
				t.resetIdle()
			}
			switch act := d.handle(ev); {
			case act == actMCPFailed:
				st.stop(ctx, report.ReasonMCPFailed) // a server mcp_status still had pending failed
			case !st.started():
				d.act(act, t, v)
			}
		case servers := <-mcpC:
			mcpC = nil
			if len(failedMCP(servers)) > 0 {
				d.mcp = servers
				st.stop(ctx, report.ReasonMCPFailed) // no prompt sent: nothing paid
			} else if !st.started() {
				d.sendFirst(t)
			}
		case <-more:
			if !st.started() && !d.final {
				d.sendMore(t)
			}
		case vr := <-v.c:
			v.c = nil
			t.resetIdle()
			if d.verified(vr) == actFinal && !st.started() {
				d.act(actFinal, t, v)
			}
		case <-timerC(t.timeout):
			d.stop(ctx, st, report.ReasonTimeout)
		case <-timerC(t.idle):
			if d.client != nil && d.client.asking() {
				t.resetIdle() // a person decides a permission request: no silence of the CLI's
				continue
			}
			d.stop(ctx, st, report.ReasonIdleTimeout)
		case <-timerC(t.linger):
			st.stop(ctx, "linger") // hung after its result: stop it, keep the result
		case <-done:
			done = nil
			d.stop(ctx, st, stopReason(ctx))
		case <-kill:
			kill = nil
			_ = d.p.Kill() // the group is gone either way; Wait reports how it ended
		}
	}
}

// stop begins the stop ladder for a timeout or ctx's end; a session's
// client learns first why its turn is stopped.
func (d *driver) stop(ctx context.Context, st *stopper, reason string) {
	if d.client != nil && !st.started() {
		if d.sent == d.results {
			// A session ending between turns: its last turn's outcome
			// stands, as if the CLI ended by itself.
			reason = ""
		}
		d.client.stopping(reason)
	}
	st.stop(ctx, reason)
}

// sendFirst sends the attempt's first prompt (a session's: every message
// that came before its CLI started) and starts a session's turn clocks.
func (d *driver) sendFirst(t *jobTimers) {
	n := 1
	if d.client != nil {
		n = len(d.prompts)
		t.turnStarted()
	}
	for _, p := range d.prompts[:n] {
		if err := d.p.SendUser(p); err != nil {
			return // the process died already; its stdout says why
		}
		d.sent++
		if d.sent == 1 {
			d.r.observeTurn(d.job.Name, d.results+1)
		}
	}
	if d.client != nil {
		d.sendMore(t) // messages that came while the attempt waited for the gate or its start
	}
}

// sendMore sends the messages a session's client sent since; each is a
// turn (the CLI queues one that comes while a turn runs).
func (d *driver) sendMore(t *jobTimers) {
	for _, m := range d.client.take() {
		d.prompts = append(d.prompts, m)
		if d.sent == d.results {
			t.turnStarted()
			d.r.observeTurn(d.job.Name, d.results+1)
		}
		if d.p.SendUser(m) == nil {
			d.sent++ // else the process died: its exit ends the attempt
		}
	}
}

// act carries out what handle or verified decided.
func (d *driver) act(a action, t *jobTimers, v *verifier) {
	switch a {
	case actFinal:
		// The last result is in: end the session gracefully. A CLI whose
		// stdin is gone anyway reports that through its exit.
		_ = d.p.CloseInput()
		t.startLinger(d.r.opts.ResultGrace)
	case actVerify:
		// The CLI waits quietly while the command runs: no idle timeout.
		t.stopIdle()
		v.start(len(d.rounds) + 1)
	case actTurnEnd:
		t.turnEnded() // a session's clocks run only while a turn does
	}
}

// What the loop does after an event.
type action int

const (
	actNone      action = iota
	actFinal            // the session's last result is in: close stdin
	actVerify           // the agent's turn is done: run the verify command
	actMCPFailed        // expect: {mcp: true} and an MCP server failed: stop now
	actTurnEnd          // a session's turns are all answered: its clocks stop
)

// handle updates the driver with one event and says what the loop must do.
func (d *driver) handle(ev claude.Event) action {
	if ev.Type == claude.TypeResult && d.box != nil {
		d.box.SyncRefs() // the turn's commits inside reach the branch before anything reads it
		if d.client != nil {
			d.client.sandboxed(sandboxReport(d.box))
		}
	}
	if d.client != nil {
		d.client.observe(ev)
	}
	if ev.Type == claude.TypeResult && d.final {
		// After the final result, a stop may make the CLI write another
		// (interrupted) one: the job's outcome is the first.
		return actNone
	}
	isResult, newSession := d.add(ev)
	switch {
	case newSession:
		// Record it now: if pneuma is killed, --resume continues it.
		d.r.journal.update(d.job.Name, func(s *JobState) { s.SessionID = d.sessionID })
		d.r.journal.touch()
	case ev.RateLimit != nil:
		d.r.noteRateLimit(d.job.Name, ev.RateLimit)
	case ev.Init != nil && d.job.Expect != nil && d.job.Expect.MCP && len(failedMCP(ev.Init.MCPServers)) > 0:
		return actMCPFailed
	case ev.Retry != nil:
		if overloadRetry(ev.Retry) {
			d.r.overloaded()
		}
		d.r.event(Event{Type: EventAPIRetry, Job: d.job.Name, Attempt: ev.Retry.Attempt, MaxRetries: ev.Retry.MaxRetries,
			DelayMS: int64(ev.Retry.RetryDelayMS), ErrorStatus: ev.Retry.ErrorStatus, Reason: ev.Retry.Error})
	case ev.Denied != nil:
		d.audit.denial(ev.Denied.ToolUseID) // counted with the tool denials
	case ev.Hook != nil && d.client == nil:
		d.r.event(hookEvent(d.job.Name, ev.Hook)) // a session's clients get the line itself
	case d.notable:
		d.r.event(noticeEvent(d.job.Name, ev))
	case ev.Type == claude.TypeAssistant || ev.Type == claude.TypeUser:
		d.audit.event(ev)
	case isResult:
		d.r.observeResult(d.job.Name, d.results, ev.Result, d.served)
		return d.afterResult(ev.Result)
	}
	return actNone
}

// afterResult decides what follows a turn's result: the next prompt, the
// verification stage, or the end of the session.
func (d *driver) afterResult(res *claude.Result) action {
	if d.client != nil {
		return d.afterTurn(res)
	}
	if !res.IsError && d.results < len(d.prompts) && d.sent < len(d.prompts) {
		if err := d.p.SendUser(d.prompts[d.sent]); err == nil {
			d.sent++
			d.r.observeTurn(d.job.Name, d.results+1)
			return actNone
		}
	}
	if !res.IsError && d.job.Verify != nil && d.sent >= len(d.prompts) {
		return actVerify
	}
	d.final = true
	return actFinal
}

// afterTurn is afterResult in a session: the next turn comes from the
// client. A usage limit ends the attempt, so that the session is held
// until the reset and then continues, as a job is.
func (d *driver) afterTurn(res *claude.Result) action {
	if _, limited := usageLimit(verdict{status: report.StatusFailed}, d.rateLimit, res); limited && res.IsError {
		d.final = true
		return actFinal
	}
	if d.results >= d.sent {
		return actTurnEnd
	}
	return actNone
}

// verified records a verification round and says what comes next: another
// turn for the agent (the follow-up was sent) or the end of the session.
func (d *driver) verified(vr report.VerifyRound) action {
	vr.CostUSD = max(d.maxCost-d.costMark, 0)
	d.costMark = d.maxCost
	d.rounds = append(d.rounds, vr)
	if vr.Passed || len(d.rounds) >= d.job.Verify.MaxRuns() {
		d.final = true
		return actFinal
	}
	if err := d.p.SendUser(verifyFollowUp(vr)); err != nil {
		d.final = true
		return actFinal
	}
	d.r.observeTurn(d.job.Name, d.results+1)
	return actNone
}

// outcome is what the attempt left for classify.
func (d *driver) outcome(exit claude.ExitStatus, stopped string) outcome {
	return outcome{
		last: d.last, results: d.results, prompts: len(d.prompts), final: d.final,
		invalid: d.invalid, exit: exit, stopped: stopped, mcp: d.mcp, outputRejected: d.outputRejected,
		verify: d.job.Verify, rounds: d.rounds, timeout: d.job.Timeout, idleTimeout: d.job.IdleTimeout,
	}
}

// client is a server session as its driver sees it: where the next
// messages come from, and who is told what the CLI writes.
type client interface {
	// wait returns the messages the client sent, waiting for one; ok is
	// false when the session ends (ctx) first.
	wait(ctx context.Context) (msgs []string, ok bool)
	// more signals that messages came while a CLI runs; take returns them.
	more() <-chan struct{}
	take() []string
	// started and ended bracket each CLI process; cut says a turn was
	// under way when it ended.
	started(p *claude.Process)
	ended(a *attempt, cut bool)
	// observe sees every event of the CLI, in order.
	observe(ev claude.Event)
	// stopping says why pneuma stops the CLI (a turn it cuts ends so).
	stopping(reason string)
	// asking reports that a permission request waits for a person;
	// asker is who answers the permission prompts (nil: the CLI's mode).
	asking() bool
	asker() func(context.Context, *claude.ControlRequest) claude.ControlResponse
	// sandboxed tells the client how its sandbox stands (CLI start, each
	// result); never called without a sandbox.
	sandboxed(rep *report.Sandbox)
	// switchedOptions applies the model and permission mode the client
	// switched to the options of a CLI about to start.
	switchedOptions(opts *claude.Options)
}

// stopper runs the stop ladder of a process once, in the background, so
// that the loop goes on draining its events meanwhile.
type stopper struct {
	p      *claude.Process
	grace  time.Duration
	reason string // why the stop began; "" while none has
	done   chan struct{}
	onStop func(reason string) // told when the ladder begins; may be nil
}

// stop begins the stop ladder for reason, unless a stop has begun already.
func (s *stopper) stop(ctx context.Context, reason string) {
	if s.done != nil {
		return
	}
	s.reason, s.done = reason, make(chan struct{})
	if s.onStop != nil {
		s.onStop(reason)
	}
	go func() {
		defer close(s.done)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 4*s.grace+5*time.Second)
		defer cancel()
		_ = s.p.Stop(sctx, s.grace) // a failed step ends in SIGKILL; Wait reports how it ended
	}()
}

func (s *stopper) started() bool { return s.done != nil }

// wait returns once a begun stop has finished.
func (s *stopper) wait() {
	if s.done != nil {
		<-s.done
	}
}

// jobTimers are an attempt's clocks: its timeout, its idle timeout, and the
// grace a CLI gets to exit after its last result. A job's timeout and idle
// timeout run from the start of the attempt; a session's (perTurn) from the
// start of each turn to its end, as the session's attempt is a turn.
type jobTimers struct {
	timeout, idle, linger *time.Timer
	timeoutAfter          time.Duration
	idleAfter             time.Duration
}

func newJobTimers(timeout, idle time.Duration, perTurn bool) *jobTimers {
	t := &jobTimers{timeoutAfter: timeout, idleAfter: idle}
	if !perTurn {
		t.turnStarted()
	}
	return t
}

// turnStarted starts the timeout and idle clocks unless they run.
func (t *jobTimers) turnStarted() {
	if t.timeout == nil && t.idle == nil {
		t.timeout, t.idle = timerOrNil(t.timeoutAfter), timerOrNil(t.idleAfter)
	}
}

// turnEnded stops the timeout and idle clocks until the next turn.
func (t *jobTimers) turnEnded() {
	for _, tm := range []*time.Timer{t.timeout, t.idle} {
		if tm != nil {
			tm.Stop()
		}
	}
	t.timeout, t.idle = nil, nil
}

func (t *jobTimers) resetIdle() {
	if t.idle != nil {
		t.idle.Reset(t.idleAfter)
	}
}

func (t *jobTimers) stopIdle() {
	if t.idle != nil {
		t.idle.Stop()
	}
}

func (t *jobTimers) startLinger(d time.Duration) {
	if t.linger == nil {
		t.linger = time.NewTimer(d)
	}
}

func (t *jobTimers) stop() {
	for _, tm := range []*time.Timer{t.timeout, t.idle, t.linger} {
		if tm != nil {
			tm.Stop()
		}
	}
}

// verifier runs the verification command of a job in the background, one
// round at a time; its result arrives on c.
type verifier struct {
	ctx    context.Context
	cancel context.CancelFunc
	spec   *jobfile.Verify
	dir    string
	env    []string
	c      chan report.VerifyRound // nil while no round runs
	wg     sync.WaitGroup
}

func newVerifier(ctx context.Context, spec *jobfile.Verify, dir string, env []string) *verifier {
	ctx, cancel := context.WithCancel(ctx)
	return &verifier{ctx: ctx, cancel: cancel, spec: spec, dir: dir, env: env}
}

func (v *verifier) running() bool { return v.c != nil }

// start runs round n.
func (v *verifier) start(n int) {
	c := make(chan report.VerifyRound, 1)
	v.c = c
	v.wg.Add(1)
	go func() {
		defer v.wg.Done()
		c <- runVerify(v.ctx, v.spec, v.dir, v.env, n)
	}()
}

// close cancels a running round and waits for it.
func (v *verifier) close() {
	v.cancel()
	v.wg.Wait()
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
