package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// Stage 2 of a session: turns. Each message is a user turn of one CLI
// process kept alive across turns (the CLI queues a message sent while a
// turn runs); the job's attempts (attempts.go) start it, or resume it with
// --resume, when a message finds none, and its driver (driver.go) sends the
// messages, runs the turn's clocks and the stop ladder. The Session is the
// driver's client: the methods below the line are what it calls.

// Send queues a user message; the session's driver sends it, starting the
// CLI first when none runs.
func (s *Session) Send(content string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.failed {
		return ErrSessionClosed
	}
	s.queue = append(s.queue, content)
	s.st.MessageCount++
	if s.proc == nil {
		s.setStatus(SessionStarting)
	} else {
		s.setStatus(SessionRunning)
	}
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is pending; it takes this message too
	}
	return nil
}

// Interrupt interrupts the running turn through the control protocol; the
// session stays usable.
func (s *Session) Interrupt() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	if s.proc == nil || len(s.inflight) == 0 {
		return nil // no turn to interrupt
	}
	s.stopReason = report.ReasonInterrupted
	return s.proc.Interrupt()
}

// --- the driver's client (driver.go) ---

// asker is who decides the permission prompts that the policy and the
// permission mode leave open: the session's clients, or nobody (the CLI's
// mode decides).
func (s *Session) asker() func(context.Context, *claude.ControlRequest) claude.ControlResponse {
	if s.plan.PermissionPrompt == jobfile.PermissionPromptClient {
		return s.ask
	}
	return nil
}

// wait returns the queued messages, waiting for one until ctx ends.
func (s *Session) wait(ctx context.Context) ([]string, bool) {
	for {
		if msgs := s.take(); len(msgs) > 0 {
			return msgs, true
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// more signals queued messages.
func (s *Session) more() <-chan struct{} { return s.wake }

// take returns the queued messages; they are in flight from now.
func (s *Session) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs := s.queue
	s.queue = nil
	s.inflight = append(s.inflight, msgs...)
	return msgs
}

// stopping notes why pneuma stops the CLI: the turn it cuts ends so.
func (s *Session) stopping(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.inflight) > 0 {
		s.stopReason = reason
	}
}

// asking reports that a permission request waits for a client.
func (s *Session) asking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) > 0
}

// started makes p the session's CLI.
func (s *Session) started(p *claude.Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.proc, s.t, s.resumed, s.initSeen = p, tally{}, s.st.CLISessionID != "", false
	s.st.CLIPid = p.Pid()
	s.emit("cli_started", map[string]any{"pid": p.Pid(), "resume": s.st.CLISessionID})
	s.setStatus(SessionRunning)
}

// sandboxed records the session's sandbox and tells clients.
func (s *Session) sandboxed(rep *report.Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Sandbox = rep
	s.emit("sandbox_update", rep)
}

// observe takes one event of the CLI.
func (s *Session) observe(ev claude.Event) {
	s.mu.Lock()
	result := s.onEvent(ev)
	s.mu.Unlock()
	if result {
		s.contentUpdate()
	}
}

// ended handles the end of a CLI process (or of its failed start) with
// the attempt's verdict; cut says a turn was under way. A resume the CLI
// rejected starts a fresh CLI session with the messages no result
// answered; otherwise the next message resumes the CLI session.
func (s *Session) ended(a *attempt, cut bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lost := s.inflight
	s.inflight = nil
	if s.proc == nil { // the CLI did not start
		s.emit("error", map[string]string{"message": "start the CLI: " + a.err})
		s.endTurn(a.verdict)
		s.idleUnlessQueued()
		return
	}
	s.account()
	s.base = accounts{cost: s.st.CostUSD, turns: s.st.NumTurns, usage: s.st.Usage}
	s.proc, s.t, s.st.CLIPid, s.stopReason = nil, tally{}, 0, ""
	data := map[string]any{"exit_code": a.exit.Code}
	if a.exit.Signal != "" {
		data["signal"] = a.exit.Signal
	}
	s.emit("cli_exited", data)
	switch {
	case a.reason == report.ReasonResumeFailed && !s.closed:
		s.emit("error", map[string]string{"code": "resume_failed",
			"message": fmt.Sprintf("the CLI could not resume session %s; a new CLI session was started", s.st.CLISessionID)})
		s.st.CLISessionID = ""
		s.queue = append(lost, s.queue...)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	case cut:
		s.endTurn(a.verdict)
		if !s.closed {
			msg := fmt.Sprintf("the CLI exited (%s) during a turn; the next message resumes the session", exitText(a.exit))
			if a.err != "" {
				msg += ": " + a.err
			}
			s.emit("error", map[string]string{"code": firstNonEmpty(stoppedBy(a.reason), "cli_exited"), "message": withStderr(msg, s.rec.stderr)})
		}
	}
	if !s.closed {
		s.idleUnlessQueued()
	}
}

// over is told that the session's run ended. Unless the session closed,
// the run gave up by itself (a usage limit beyond limits.max_wait): the
// session fails, and takes no more messages.
func (s *Session) over(res report.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.failed = true
	s.emit("error", map[string]string{"code": firstNonEmpty(res.Reason, "failed"), "message": res.Error})
	s.setStatus(SessionFailed)
}

// stoppedBy is the error code of a turn pneuma stopped, "" for others.
func stoppedBy(reason string) string {
	switch reason {
	case report.ReasonTimeout, report.ReasonIdleTimeout:
		return reason
	}
	return ""
}

// idleUnlessQueued shows the session idle unless a message waits; the
// caller holds mu.
func (s *Session) idleUnlessQueued() {
	if len(s.queue) == 0 && len(s.pending) == 0 {
		s.setStatus(SessionIdle)
	}
}

// Event takes the events of the session's run (Reporter): API retries and
// usage-limit holds are passed on to clients.
func (s *Session) Event(e Event) {
	var data map[string]any
	switch e.Type {
	case EventAPIRetry:
		data = map[string]any{"attempt": e.Attempt, "delay_ms": e.DelayMS, "error_status": e.ErrorStatus, "error": e.Reason}
	case EventUsageLimitWait:
		data = map[string]any{"resume_at": e.ResumeAt, "message": e.Message}
	case EventUsageReserve, EventWritesLost:
		data = map[string]any{"message": e.Message}
	case EventCompactBoundary:
		data = map[string]any{"message": e.Message, "compact": e.Compact}
	case EventModelFallback:
		data = map[string]any{"message": e.Message, "model": e.Model}
	case EventBackgroundTask:
		data = map[string]any{"task": e.Task}
	default:
		return // the run's own bookkeeping
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit(e.Type, data)
}

// --- events ---

// onEvent handles one event; the caller holds mu. It reports a result.
func (s *Session) onEvent(ev claude.Event) bool {
	isResult, _ := s.t.add(ev)
	switch ev.Type {
	case claude.TypeSystem:
		if ev.Init == nil {
			s.emitOther(ev)
		}
		if ev.Init != nil && !s.initSeen {
			s.initSeen = true
			s.changed()
			s.st.CLISessionID, s.st.Model = s.t.sessionID, firstNonEmpty(s.t.model, s.st.Model)
			s.emit("session_init", map[string]any{"cli_session_id": s.t.sessionID, "model": s.t.model, "cwd": ev.Init.Cwd})
		}
	case claude.TypeAssistant, claude.TypeUser:
		s.emitLine(ev)
	case claude.TypeStreamEvent:
		s.emitLine(ev)
	case claude.TypeResult:
		switch {
		case !isResult:
		case s.resumed && !s.initSeen:
			// A result before any init: the CLI rejected the resume
			// ("No conversation found"); ended starts afresh.
		default:
			s.onResult(ev.Result)
		}
	default:
		s.emitOther(ev)
	}
	return isResult
}

// emitLine passes a CLI line on to clients: its parts as written
// (claude.Parts, kept when the line was decoded: it is not decoded again),
// {"message"|"event":...,"parent_tool_use_id":...,"uuid":...}.
func (s *Session) emitLine(ev claude.Event) {
	p := ev.Parts
	if p == nil {
		return
	}
	b := make([]byte, 0, len(p.Message)+len(p.Event)+len(p.UUID)+len(ev.ParentToolUseID)+64)
	b = append(b, '{')
	if len(p.Message) > 0 {
		b = append(append(b, `"message":`...), p.Message...)
		b = append(b, ',')
	}
	if len(p.Event) > 0 {
		b = append(append(b, `"event":`...), p.Event...)
		b = append(b, ',')
	}
	b = append(b, `"parent_tool_use_id":`...)
	if ev.ParentToolUseID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, ev.ParentToolUseID)
	}
	if p.UUID != "" {
		b = appendJSONString(append(b, `,"uuid":`...), p.UUID)
	}
	s.emitJSON(ev.Type, append(b, '}'))
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}

// progressKinds are kinds written many times a turn to say that work goes
// on; stream.jsonl keeps them, clients are not sent them.
var progressKinds = []string{claude.TypeToolProgress, "system/" + claude.SubtypeTaskProgress,
	"system/" + claude.SubtypeThinkingTokens, claude.TypeKeepAlive}

// emitOther passes a line of a kind the session does not otherwise
// emit to clients verbatim, as a cli_message naming its kind: hook lines
// (include_hook_events), kinds pneuma only names and kinds it does not know.
func (s *Session) emitOther(ev claude.Event) {
	switch {
	case ev.Parts == nil || len(ev.Parts.Line) == 0, ev.Type == claude.TypeInvalid, ev.Type == claude.TypeOversized,
		ev.Control != nil, ev.Reply != nil, ev.CancelRequestID != "", ev.RateLimit != nil,
		ev.Retry != nil, s.t.notable, slices.Contains(progressKinds, ev.Kind()):
		return // handled elsewhere, or progress ticks
	case ev.Type == claude.TypeSystem && ev.Subtype == claude.SubtypeInit:
		return
	}
	s.emit("cli_message", map[string]any{"kind": ev.Kind(), "line": ev.Parts.Line})
}

// onResult ends a turn; the caller holds mu.
func (s *Session) onResult(res *claude.Result) {
	if len(s.inflight) > 0 {
		s.inflight = s.inflight[1:]
	}
	s.account()
	s.emit("result", map[string]any{
		"subtype": res.Subtype, "is_error": res.IsError, "num_turns": res.NumTurns, "result": res.Result,
		"total_cost_usd": s.st.CostUSD, "duration_ms": res.DurationMS, "usage": res.Usage, "errors": res.Errors,
	})
	v := turnVerdict(res, s.t.rateLimit)
	if s.stopReason != "" && res.IsError { // the turn was cut: that is why it ended
		j := s.plan.Job
		v = classify(outcome{last: res, results: 1, prompts: 1, final: true, stopped: s.stopReason, timeout: j.Timeout, idleTimeout: j.IdleTimeout})
	}
	s.stopReason = ""
	s.endTurn(v)
	if len(s.inflight) == 0 { // a message sent during the turn may wait in the queue
		s.idleUnlessQueued()
	}
}

// turnVerdict decides a turn that ended on its result as a job's attempt
// of one prompt is decided.
func turnVerdict(res *claude.Result, rl *claude.RateLimitInfo) verdict {
	v := classify(outcome{last: res, results: 1, prompts: 1, final: true})
	if _, limited := usageLimit(v, rl, res); limited {
		v.reason = report.ReasonUsageLimit
	}
	return v
}

// endTurn records and announces how a turn ended; the caller holds mu.
func (s *Session) endTurn(v verdict) {
	s.st.LastTurn = &TurnOutcome{Status: v.status, Reason: v.reason, Error: v.err}
	s.emit("turn_end", s.st.LastTurn)
}

// contentUpdate tells clients which files differ from HEAD now, when that
// changed since the last update.
func (s *Session) contentUpdate() {
	j := s.plan.Job
	changes, err := s.git.Changes(context.Background(), j.Dir)
	if err != nil {
		return // not a worktree any more (removed under it): the next turn says so
	}
	b, _ := json.Marshal(changes) // a list of string pairs always encodes
	s.mu.Lock()
	defer s.mu.Unlock()
	if string(b) == s.lastChange {
		return
	}
	s.lastChange = string(b)
	s.emit("content_update", map[string]any{"files": changes})
}
