package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/usage"
)

// This file mirrors the session API runner is growing (docs: the lead's
// session-api note, to become docs/serve.md). Every type here is TO BE
// REPLACED BY RUNNER'S AT MERGE: same names, same fields; serve's code reads
// them through these names only, so the swap is deleting this file and
// aliasing (type SessionSpec = runner.SessionSpec, ...).

// Engine opens sessions; runner.OpenSession is the real one.
type Engine interface {
	Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error)
}

// EngineFunc adapts a function (runner.OpenSession) to Engine.
type EngineFunc func(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error)

// Open calls f.
func (f EngineFunc) Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error) {
	return f(ctx, spec, o)
}

// Session is runner's *Session as serve uses it.
type Session interface {
	Send(content string) error
	Interrupt() error
	Answer(requestID string, d PermissionDecision) error
	State() SessionState
	Close(ctx context.Context) (SessionSummary, error)
	Shutdown(ctx context.Context) error
}

// SessionSpec mirrors runner.SessionSpec (to be replaced at merge).
type SessionSpec struct {
	Name               string            `json:"name,omitempty"`
	Repo               string            `json:"repo,omitempty"`
	Base               string            `json:"base,omitempty"`
	Worktree           *bool             `json:"worktree,omitempty"`
	Model              string            `json:"model,omitempty"`
	PermissionMode     string            `json:"permission_mode,omitempty"`
	Policy             *policy.Spec      `json:"policy,omitempty"`
	AllowedTools       []string          `json:"allowed_tools,omitempty"`
	DisallowedTools    []string          `json:"disallowed_tools,omitempty"`
	Tools              []string          `json:"tools,omitempty"`
	MaxTurns           int               `json:"max_turns,omitempty"`
	MaxBudgetUSD       float64           `json:"max_budget_usd,omitempty"`
	SystemPrompt       string            `json:"system_prompt,omitempty"`
	AppendSystemPrompt string            `json:"append_system_prompt,omitempty"`
	MCPConfig          string            `json:"mcp_config,omitempty"`
	Settings           string            `json:"settings,omitempty"`
	AddDirs            []string          `json:"add_dirs,omitempty"`
	Env                map[string]string `json:"env,omitempty"`
	Timeout            runner.Duration   `json:"timeout,omitempty"`
	IdleTimeout        runner.Duration   `json:"idle_timeout,omitempty"`
	Resume             string            `json:"resume,omitempty"`
	PermissionPrompt   string            `json:"permission_prompt,omitempty"`
	PermissionTimeout  runner.Duration   `json:"permission_timeout,omitempty"`
}

// SessionOptions mirrors runner.SessionOptions (to be replaced at merge).
type SessionOptions struct {
	ID      string
	Dir     runner.JobDir
	WorkDir string
	Roots   []string
	Binary  string
	Environ []string
	OnEvent func(SessionEvent)
	Restore *SessionState
}

// PermissionDecision mirrors runner.PermissionDecision (to be replaced at merge).
type PermissionDecision struct {
	Behavior     string
	UpdatedInput json.RawMessage
	Message      string
}

// PendingPermission mirrors runner.PendingPermission (to be replaced at merge).
type PendingPermission struct {
	RequestID string          `json:"request_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
}

// SessionState mirrors runner.SessionState (to be replaced at merge).
type SessionState struct {
	ID, CLISessionID, Name, Status                  string
	Repo, Base, BaseCommit, Branch, Worktree, Model string
	CreatedAt                                       time.Time
	NumTurns                                        int
	CostUSD                                         float64
	Usage                                           usage.Tokens
	MessageCount                                    int
	PendingPermissions                              []PendingPermission
	Spec                                            SessionSpec
}

// SessionSummary mirrors runner.SessionSummary (to be replaced at merge).
type SessionSummary struct {
	State                               SessionState
	FilesChanged, Insertions, Deletions int
	Commit, Transcript                  string
}

// SessionEvent mirrors runner.SessionEvent (to be replaced at merge).
type SessionEvent struct {
	Type string
	Data json.RawMessage
}

// Session statuses.
const (
	StatusStarting          = "starting"
	StatusIdle              = "idle"
	StatusRunning           = "running"
	StatusWaitingPermission = "waiting_permission"
	StatusClosed            = "closed"
	StatusFailed            = "failed"
)

// Errors of Session.Answer, mirrored from runner (to be replaced at merge).
var (
	ErrPermissionResolved = errors.New("permission request already decided")
	ErrNoSuchPermission   = errors.New("no such permission request")
)

// OutsideRootsError mirrors runner.OutsideRootsError: a repository that does
// not resolve under one of the server's roots (to be replaced at merge).
type OutsideRootsError struct {
	Path  string
	Roots []string
}

func (e *OutsideRootsError) Error() string {
	return fmt.Sprintf("%s is not under a root of this server (%v)", e.Path, e.Roots)
}
