package serve

import (
	"context"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// Sessions are runner's (runner.OpenSession): serve holds no lifecycle
// logic. It reaches them through the Engine and Session interfaces so that
// its own logic (sequencing, fan-out, limits, restarts) is tested with a
// fake engine as well as with the real one.

// Engine opens sessions; runner.OpenSession is the real one.
type Engine interface {
	Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error)
}

// RunnerEngine opens runner sessions. A Server passes its own gate (shared
// with its runs) in SessionOptions.Gate; sessions opened without one share
// the engine's (a usage limit one session meets holds the CLI starts of
// all until its reset, a 429/529 storm slows them all).
var RunnerEngine = NewRunnerEngine()

// NewRunnerEngine returns an engine of runner sessions with a gate of its own.
func NewRunnerEngine() Engine {
	gate := runner.NewSharedGate(0, nil)
	return EngineFunc(func(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error) {
		if o.Gate == nil {
			o.Gate = gate
		}
		s, err := runner.OpenSession(ctx, spec, o)
		if err != nil {
			return nil, err // a nil *runner.Session must not become a non-nil Session
		}
		return s, nil
	})
}

// EngineFunc adapts a function to Engine.
type EngineFunc func(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error)

// Open calls f.
func (f EngineFunc) Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error) {
	return f(ctx, spec, o)
}

// Session is runner's *Session as serve uses it.
type Session interface {
	Send(content string) error
	Interrupt() error
	// SetModel and SetPermissionMode switch the running session and
	// return the CLI's acknowledgement.
	SetModel(ctx context.Context, model string) (ControlAck, error)
	SetPermissionMode(ctx context.Context, mode string) (ControlAck, error)
	Answer(requestID string, d PermissionDecision) error
	// State takes the lock under which the session emits a turn's end
	// (result, turn_end, status): entry.settle relies on it.
	State() SessionState
	Close(ctx context.Context) (SessionSummary, error)
	Shutdown(ctx context.Context) error
}

// The session types are runner's.
type (
	SessionSpec        = jobfile.Session
	SessionOptions     = runner.SessionOptions
	PermissionDecision = runner.PermissionDecision
	PendingPermission  = runner.PendingPermission
	SessionState       = runner.SessionState
	SessionSummary     = runner.SessionSummary
	SessionEvent       = runner.SessionEvent
	OutsideRootsError  = runner.OutsideRootsError
)

// Session statuses.
const (
	StatusStarting          = runner.SessionStarting
	StatusIdle              = runner.SessionIdle
	StatusRunning           = runner.SessionRunning
	StatusWaitingPermission = runner.SessionWaiting
	StatusClosed            = runner.SessionClosed
	StatusFailed            = runner.SessionFailed
)

// Errors of Session.Answer.
var (
	ErrPermissionResolved = runner.ErrPermissionResolved
	ErrNoSuchPermission   = runner.ErrNoSuchPermission
)
