package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
)

// A client may switch a session's model and permission mode between or
// during turns. The running CLI is asked with its set_model and
// set_permission_mode control requests and its acknowledgement is the
// answer; the switch is also kept for the CLI processes the session starts
// later (after a cut turn, a restart or a usage-limit hold), so it lasts.

// switches are the model and permission mode a client set; nil: not set.
type switches struct {
	model *string
	mode  *string
}

// apply sets the switched values on the options of a CLI about to start.
func (w switches) apply(opts *claude.Options) {
	if w.model != nil {
		opts.Model = *w.model
	}
	if w.mode != nil {
		opts.PermissionMode = *w.mode
	}
}

// ControlAck is the CLI's answer to a switch: its control_response payload
// (set_permission_mode names the mode in effect), or Pending when no CLI
// ran and the switch waits for the next one.
type ControlAck struct {
	Response json.RawMessage `json:"response,omitempty"`
	Pending  bool            `json:"pending,omitempty"`
}

// SetModel switches the session's model from the next API call on ("":
// back to the session's own model). The CLI confirms a model it has not
// used with a one-token API call first: a model the API does not know is
// refused (its error_code "not_found"), as is one it could not confirm in
// time ("check_unreachable").
func (s *Session) SetModel(ctx context.Context, model string) (ControlAck, error) {
	if model == "" {
		model = s.plan.Job.Options.Model
	}
	ack, err := s.control(ctx, "set_model "+strconv.Quote(model), func(w *switches) { w.model = &model },
		func(p *claude.Process) (*claude.ControlReply, error) { return p.SetModel(ctx, model) })
	if err != nil {
		return ack, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.Model = firstNonEmpty(model, s.st.Model)
	s.emit("model_changed", map[string]any{"model": model, "pending": ack.Pending, "response": ack.Response})
	return ack, nil
}

// SetPermissionMode switches the session's permission mode; the server
// checks its policy first.
func (s *Session) SetPermissionMode(ctx context.Context, mode string) (ControlAck, error) {
	if modes := jobfile.PermissionModes(); !slices.Contains(modes, mode) {
		return ControlAck{}, &ConfigError{fmt.Errorf("permission mode %q is not one of %v", mode, modes)}
	}
	ack, err := s.control(ctx, "set_permission_mode "+strconv.Quote(mode), func(w *switches) { w.mode = &mode },
		func(p *claude.Process) (*claude.ControlReply, error) { return p.SetPermissionMode(ctx, mode) })
	if err != nil {
		return ack, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit("permission_mode_changed", map[string]any{"mode": mode, "pending": ack.Pending, "response": ack.Response})
	return ack, nil
}

// control asks the running CLI to make a switch and waits for its
// acknowledgement (until ctx ends: ErrNoAck), and records the switch for
// the CLIs that start later. A switch the CLI refuses is an error and is not
// recorded. When a queued message is starting the CLI, the switch waits for
// it; one that finds no CLI at all (no message yet, or a CLI on its way
// out) is Pending: the next CLI starts with it.
func (s *Session) control(ctx context.Context, what string, record func(*switches), ask func(*claude.Process) (*claude.ControlReply, error)) (ControlAck, error) {
	s.mu.Lock()
	// A message is starting the CLI: wait for it and its init line, so
	// that the switch goes to the CLI that answers the message (and is
	// acknowledged by it) rather than being left pending for the next.
	for !s.closed && s.starting() {
		changed := s.nextChange()
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ControlAck{}, fmt.Errorf("%s: %w: %w", what, ErrNoAck, ctx.Err())
		}
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return ControlAck{}, ErrSessionClosed
	}
	p := s.proc
	s.mu.Unlock()
	var ack ControlAck
	if p == nil {
		ack.Pending = true
	} else {
		reply, err := ask(p) // not under mu: the CLI's answer comes through observe
		switch {
		case err != nil && reply != nil:
			return ControlAck{}, &ControlRefusedError{Request: what, Code: reply.ErrorCode, Message: reply.Error}
		case err != nil && ctx.Err() != nil:
			return ControlAck{}, fmt.Errorf("%s: %w: %w", what, ErrNoAck, err)
		case err != nil:
			ack.Pending = true // the CLI ended meanwhile
		default:
			ack.Response = reply.Response
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	record(&s.switched)
	return ack, nil
}

// starting reports whether a queued message is starting a CLI that has not
// written its init line yet; the caller holds mu.
func (s *Session) starting() bool {
	if s.proc != nil {
		return !s.initSeen && s.st.Status == SessionRunning
	}
	return s.st.Status == SessionStarting && len(s.queue)+len(s.inflight) > 0
}

// ErrNoAck: the CLI did not answer a switch before the caller's deadline.
// The switch may still take effect; it is not recorded for later CLIs.
var ErrNoAck = errors.New("the CLI did not acknowledge the switch in time")

// ControlRefusedError is the CLI's error answer to a switch.
type ControlRefusedError struct {
	Request string // the request and its value: set_model "x"
	Code    string // the CLI's error_code: not_found, check_unreachable, invalid_mode, ...
	Message string // the CLI's
}

func (e *ControlRefusedError) Error() string {
	code := ""
	if e.Code != "" {
		code = " (" + e.Code + ")"
	}
	return "claude refused " + e.Request + code + ": " + e.Message
}

// switchedOptions applies the client's switches to a CLI about to start.
func (s *Session) switchedOptions(opts *claude.Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.switched.apply(opts)
}
