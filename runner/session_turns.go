package runner

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pneuma-cli/pneuma/claude"
)

// Stage 2 of a session: turns. Each message is a user turn of one CLI
// process kept alive across turns (the CLI queues a message sent while a
// turn runs); the process is started, or resumed with --resume, when a
// message finds none.

// Send sends a user message.
func (s *Session) Send(content string) error {
	// Starting a CLI takes a second (node, then the control handshake):
	// it runs outside mu, so that State, Answer and the events of the
	// session never wait for it; startMu keeps sends (and end) in order.
	s.startMu.Lock()
	defer s.startMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	if s.proc == nil {
		spec := s.cliSpec()
		s.setStatus(SessionStarting)
		s.mu.Unlock()
		p, err := startCLI(context.Background(), spec)
		s.mu.Lock()
		if err != nil {
			err = fmt.Errorf("start the CLI: %w", err)
			s.emit("error", map[string]string{"message": err.Error()})
			s.setStatus(SessionIdle)
			return err
		}
		s.started(p)
	}
	s.inflight = append(s.inflight, content)
	s.st.MessageCount++
	s.setStatus(SessionRunning)
	// A process dying right now fails the write; its exit is handled by the
	// reader, which resends what no result answered when it resumes.
	_ = s.proc.SendUser(content)
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
	return s.proc.Interrupt()
}

// cliSpec is how the session starts its CLI; the caller holds mu.
func (s *Session) cliSpec() cliSpec {
	j := s.plan.Job
	opts := j.Options
	opts.Resume = s.st.CLISessionID
	spec := cliSpec{binary: j.Binary, dir: j.Dir, env: childEnv(s.o.Environ, j.Env), opts: opts,
		policy: j.Policy, audit: s.rec.audit, stream: s.rec.stream, stderr: s.rec.stderr, stopGrace: s.o.StopGrace, raw: true,
		box: s.box}
	if s.plan.PermissionPrompt == PermissionPromptClient {
		spec.ask = s.ask
	}
	return spec
}

// start starts the session's CLI holding mu (a resend after a rejected
// resume, rare); Send starts it without.
func (s *Session) start() error {
	spec := s.cliSpec()
	p, err := startCLI(context.Background(), spec)
	if err != nil {
		return fmt.Errorf("start the CLI: %w", err)
	}
	s.started(p)
	return nil
}

// started makes p the session's CLI and starts reading it; the caller
// holds mu.
func (s *Session) started(p *claude.Process) {
	s.proc, s.t, s.resumed, s.initSeen = p, tally{}, s.st.CLISessionID != "", false
	s.st.CLIPid = p.Pid()
	done := make(chan struct{})
	s.readerDone = done
	s.emit("cli_started", map[string]any{"pid": p.Pid(), "resume": s.st.CLISessionID})
	go s.read(p, done)
}

// read takes the process's events until its stdout ends, then its exit.
func (s *Session) read(p *claude.Process, done chan struct{}) {
	defer close(done)
	for ev := range p.Events() {
		s.mu.Lock()
		result := s.onEvent(ev)
		s.mu.Unlock()
		if result {
			s.contentUpdate()
		}
	}
	exit, err := p.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onExit(exit, err)
}

// onEvent handles one event; the caller holds mu. It reports a result.
func (s *Session) onEvent(ev claude.Event) bool {
	isResult, _ := s.t.add(ev)
	switch ev.Type {
	case claude.TypeSystem:
		if ev.Init != nil && !s.initSeen {
			s.initSeen = true
			s.st.CLISessionID, s.st.Model = s.t.sessionID, firstNonEmpty(s.t.model, s.st.Model)
			s.emit("session_init", map[string]any{"cli_session_id": s.t.sessionID, "model": s.t.model, "cwd": ev.Init.Cwd})
		}
	case claude.TypeAssistant, claude.TypeUser:
		s.rec.audit.event(ev)
		s.emitLine(ev)
	case claude.TypeStreamEvent:
		s.emitLine(ev)
	case claude.TypeResult:
		switch {
		case !isResult:
		case s.resumed && !s.initSeen:
			// A result before any init: the CLI rejected the resume
			// ("No conversation found"); onExit starts afresh.
		default:
			s.onResult(ev.Result)
		}
	}
	return isResult
}

// lineFields are the parts of an assistant, user or stream_event line that
// clients get.
type lineFields struct {
	Message         json.RawMessage `json:"message,omitempty"`
	Event           json.RawMessage `json:"event,omitempty"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	UUID            string          `json:"uuid,omitempty"`
}

// emitLine passes a CLI line on to clients.
func (s *Session) emitLine(ev claude.Event) {
	var f lineFields
	if err := json.Unmarshal(ev.Raw, &f); err != nil {
		return // a line that decoded once decodes again; nothing to pass on otherwise
	}
	s.emit(ev.Type, f)
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
	if len(s.inflight) == 0 && len(s.pending) == 0 {
		s.setStatus(SessionIdle)
	}
}

// onExit handles the end of a CLI process; the caller holds mu. A resume
// the CLI rejected (it exits before its init line) starts a fresh CLI
// session with the messages no result answered.
func (s *Session) onExit(exit claude.ExitStatus, waitErr error) {
	s.account()
	s.base = accounts{cost: s.st.CostUSD, turns: s.st.NumTurns, usage: s.st.Usage}
	s.proc, s.t, s.st.CLIPid = nil, tally{}, 0
	data := map[string]any{"exit_code": exit.Code}
	if exit.Signal != "" {
		data["signal"] = exit.Signal
	}
	s.emit("cli_exited", data)
	if s.closed {
		return
	}
	lost := s.inflight
	s.inflight = nil
	switch {
	case s.resumed && !s.initSeen:
		s.emit("error", map[string]string{"code": "resume_failed",
			"message": fmt.Sprintf("the CLI could not resume session %s; a new CLI session was started", s.st.CLISessionID)})
		s.st.CLISessionID = ""
		s.resend(lost)
	case len(lost) > 0:
		msg := fmt.Sprintf("the CLI exited (%s) during a turn; the next message resumes the session", exitText(exit))
		if waitErr != nil {
			msg += ": " + waitErr.Error()
		}
		s.emit("error", map[string]string{"code": "cli_exited", "message": withStderr(msg, s.rec.stderr)})
	}
	if len(s.inflight) == 0 {
		s.setStatus(SessionIdle)
	}
}

// resend starts a CLI and sends it messages again; the caller holds mu.
func (s *Session) resend(msgs []string) {
	if len(msgs) == 0 {
		return
	}
	if err := s.start(); err != nil {
		s.emit("error", map[string]string{"message": err.Error()})
		return
	}
	for _, m := range msgs {
		s.inflight = append(s.inflight, m)
		_ = s.proc.SendUser(m) // a failure shows as the process's exit
	}
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
