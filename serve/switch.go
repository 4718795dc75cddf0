package serve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// A client switches a session's model or permission mode mid-session
// (POST /api/sessions/{id}/model and /permission-mode, or the WebSocket's
// set_model and set_permission_mode). The running CLI is asked with its
// control requests and the answer carries its acknowledgement; a mode the
// server's policy refuses never reaches it.

// ControlAck is the CLI's acknowledgement of a switch.
type ControlAck = runner.ControlAck

// switchTimeout bounds the wait for the CLI's acknowledgement: it answers
// control requests at once, during a turn too.
const switchTimeout = 30 * time.Second

// errNotRunning: a restored session has no session object until its next
// message; a switch then has nothing to apply to.
var errNotRunning = errors.New("the session was restored and has not started again: send a message first")

// modelRequest and modeRequest are the bodies of the switch routes.
type modelRequest struct {
	Model string `json:"model"`
}

type modeRequest struct {
	Mode string `json:"mode"`
}

// checkModel refuses a model name that could not be one: too long, control
// characters, or a leading "-" (it also becomes --model of a later CLI).
func checkModel(model string) error {
	if len(model) > MaxNameBytes || strings.HasPrefix(model, "-") || strings.IndexFunc(model, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0 {
		return refuseName("model", "is not a model name")
	}
	return nil
}

// setModel switches the session's model ("" back to its own).
func (e *entry) setModel(ctx context.Context, model string) (ControlAck, error) {
	if err := checkModel(model); err != nil {
		return ControlAck{}, err
	}
	sess, err := e.running()
	if err != nil {
		return ControlAck{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, switchTimeout)
	defer cancel()
	return sess.SetModel(ctx, model)
}

// setPermissionMode switches the session's permission mode to one the
// policy allows.
func (e *entry) setPermissionMode(ctx context.Context, mode string) (ControlAck, error) {
	if modes := jobfile.PermissionModes(); !slices.Contains(modes, mode) {
		return ControlAck{}, refuseName("mode", "%q is not a permission mode (one of %s)", mode, strings.Join(modes, ", "))
	}
	if !slices.Contains(e.cfg.Policy.PermissionModes, mode) {
		return ControlAck{}, refuse("mode", "permission mode %q is not allowed by the server (allowed: %s)", mode, strings.Join(e.cfg.Policy.PermissionModes, ", "))
	}
	sess, err := e.running()
	if err != nil {
		return ControlAck{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, switchTimeout)
	defer cancel()
	return sess.SetPermissionMode(ctx, mode)
}

// running is the session's live object, or why there is none.
func (e *entry) running() (Session, error) {
	if sess := e.current(); sess != nil {
		return sess, nil
	}
	switch st := e.snapshot().Status; {
	case st == StatusDamaged:
		return nil, errDamaged
	case isTerminal(st):
		return nil, errClosed
	}
	return nil, errNotRunning
}

func (s *Server) setSessionModel(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	var req modelRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	ack, err := e.setModel(r.Context(), req.Model)
	s.switchAnswer(w, err, map[string]any{"model": req.Model, "pending": ack.Pending, "response": ack.Response})
}

func (s *Server) setSessionMode(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	var req modeRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	ack, err := e.setPermissionMode(r.Context(), req.Mode)
	s.switchAnswer(w, err, map[string]any{"mode": req.Mode, "pending": ack.Pending, "response": ack.Response})
}

// switchAnswer writes the answer to a switch: the acknowledgement, or the
// error with its status (403 policy, 400 malformed, 409 not running, 422
// refused by the CLI: a model the API does not know, a mode it will not
// take; 504 no acknowledgement in time, or a model the CLI could not
// confirm with the API in time).
func (s *Server) switchAnswer(w http.ResponseWriter, err error, ok map[string]any) {
	var refused *runner.ControlRefusedError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, ok)
	case policyError(w, err, "invalid switch"):
	case errors.Is(err, errNotRunning):
		writeError(w, http.StatusConflict, "%v", err)
	case errors.As(err, &refused) && refused.Code == "check_unreachable":
		writeError(w, http.StatusGatewayTimeout, "%v", err) // the API did not confirm the model in time
	case errors.As(err, &refused):
		writeError(w, http.StatusUnprocessableEntity, "%v", err)
	case errors.Is(err, runner.ErrNoAck):
		writeError(w, http.StatusGatewayTimeout, "%v", err)
	default:
		s.engineError(w, err)
	}
}
