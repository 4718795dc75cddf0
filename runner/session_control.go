package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
// back to the session's own model).
func (s *Session) SetModel(ctx context.Context, model string) (ControlAck, error) {
	if model == "" {
		model = s.plan.Job.Options.Model
	}
	ack, err := s.control(ctx, func(w *switches) { w.model = &model },
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
	ack, err := s.control(ctx, func(w *switches) { w.mode = &mode },
		func(p *claude.Process) (*claude.ControlReply, error) { return p.SetPermissionMode(ctx, mode) })
	if err != nil {
		return ack, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emit("permission_mode_changed", map[string]any{"mode": mode, "pending": ack.Pending, "response": ack.Response})
	return ack, nil
}

// control asks the running CLI, if any, to make a switch, and records it
// for the CLIs that start later. A switch the CLI refuses is an error and
// is not recorded; one that finds no CLI (or a CLI on its way out) waits
// for the next.
func (s *Session) control(ctx context.Context, record func(*switches), ask func(*claude.Process) (*claude.ControlReply, error)) (ControlAck, error) {
	s.mu.Lock()
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
			return ControlAck{}, &ControlRefusedError{Message: reply.Error}
		case err != nil && ctx.Err() != nil:
			return ControlAck{}, err
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

// ControlRefusedError is the CLI's error answer to a switch.
type ControlRefusedError struct{ Message string }

func (e *ControlRefusedError) Error() string { return "claude refused: " + e.Message }

// switchedOptions applies the client's switches to a CLI about to start.
func (s *Session) switchedOptions(opts *claude.Options) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.switched.apply(opts)
}
