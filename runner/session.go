package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/usage"
	"github.com/pneuma-cli/pneuma/worktree"
)

// A Session is a job you talk to: a run of one job through the same stages,
// gate, driver and finish as a job of a jobs file (job.go), whose prompts
// come from a client, one turn per message, and whose permission prompts a
// client may answer. OpenSession runs the prepare stage; the session's
// goroutine then runs its attempts (one CLI process kept across turns,
// resumed when a message finds none) until Close or Shutdown, then finish.
type Session struct {
	o    SessionOptions
	plan SessionPlan
	git  *worktree.Manager
	rec  *records

	r      *run               // the session's run of its one job
	cancel context.CancelFunc // ends the run: the session closes
	done   chan struct{}      // closed when the run ended, res set
	res    report.Job         // the job's result, once done
	wake   chan struct{}      // one slot: a message is queued

	// mu guards everything below, and serialises OnEvent calls so that
	// events reach the server in the order they happened.
	mu       sync.Mutex
	st       SessionState
	proc     *claude.Process
	t        tally    // of the current process
	base     accounts // of the session's earlier processes
	queue    []string // messages no CLI has been sent yet
	inflight []string // messages sent that no result answered yet
	resumed  bool     // the current process resumes a CLI session
	initSeen bool     // the current process wrote its init line
	// stopReason says why the running turn is being stopped (a client's
	// interrupt, a timeout, the session's end); "" while it is not.
	stopReason string
	pending    map[string]*pendingPermission
	answered   map[string]bool
	lastChange string // the last content_update sent, to send only news
	closed     bool
	// switched are the model and permission mode a client set mid-session,
	// for the CLI processes that start later (session_control.go).
	switched switches
	failed   bool // the run ended by itself: no more messages
	// changeC is closed (and replaced) at each status change and when the
	// CLI's init line comes, for a switch waiting for the CLI a queued
	// message is starting (session_control.go).
	changeC chan struct{}
}

// accounts are what a session's finished CLI processes spent.
type accounts struct {
	cost  float64
	turns int
	usage usage.Tokens
}

// Session statuses.
const (
	SessionStarting = "starting"
	SessionIdle     = "idle"
	SessionRunning  = "running"
	SessionWaiting  = "waiting_permission"
	SessionClosed   = "closed"
	SessionFailed   = "failed"
)

// Errors of a session's methods that a server maps to answers.
var (
	ErrSessionClosed      = errors.New("the session is closed")
	ErrPermissionResolved = errors.New("that permission request was answered already")
	ErrNoSuchPermission   = errors.New("no such permission request")
)

// SessionOptions are the server-side settings of one session.
type SessionOptions struct {
	// ID is the server's session id, already safe as a path and branch name.
	ID string
	// Dir holds the session's records (stream, stderr, audit, patch, transcript).
	Dir JobDir
	// WorkDir is where a session without a repo runs, and what relative
	// repos resolve against.
	WorkDir string
	// Roots are the directories a session's repository must resolve under
	// (symlinks followed); empty allows any.
	Roots []string
	// Binary is the claude CLI; Environ the CLI's base environment.
	Binary  string
	Environ []string
	// OnEvent receives every event in order. Calls never overlap; it must
	// not block for long and must not call the Session.
	OnEvent func(SessionEvent)
	// Restore reopens a session saved before a restart (its worktree is
	// reused; the next message resumes its CLI session).
	Restore *SessionState
	// IsRoot says pneuma runs as root (bypassPermissions needs IS_SANDBOX then).
	IsRoot bool
	// Gate, when set, is shared with the server's other sessions and runs
	// (a 429/529 storm slows them all, a usage limit holds every session);
	// nil gives the session a gate of its own.
	Gate *SharedGate
	// Limits say how a usage limit holds the session (default: wait for
	// the reset up to limits.max_wait's default, then continue).
	Limits      *Limits
	StopGrace   time.Duration
	StderrLimit int
	Git         *worktree.Manager
	Prices      *history.PriceTable
}

// SessionPlan is a session's planned job and permission settings: what a
// restart needs to reopen it.
type SessionPlan struct {
	Job               *Job          `json:"job"`
	PermissionPrompt  string        `json:"permission_prompt,omitempty"`
	PermissionTimeout time.Duration `json:"permission_timeout"`
}

// SessionState is a snapshot of a session, for clients and session.json.
type SessionState struct {
	ID                 string              `json:"id"`
	CLISessionID       string              `json:"cli_session_id"`
	Name               string              `json:"name"`
	Status             string              `json:"status"`
	Repo               string              `json:"repo"`
	Base               string              `json:"base"`
	Branch             string              `json:"branch"`
	Worktree           string              `json:"worktree"`
	Model              string              `json:"model"`
	CreatedAt          time.Time           `json:"created_at"`
	NumTurns           int                 `json:"num_turns"`
	CostUSD            float64             `json:"cost_usd"`
	Usage              usage.Tokens        `json:"usage"`
	MessageCount       int                 `json:"message_count"`
	PendingPermissions []PendingPermission `json:"pending_permissions"`
	Plan               SessionPlan         `json:"plan"`
	// LastTurn is how the latest turn ended, decided as a job's attempt is
	// (report statuses and reasons); nil before the first.
	LastTurn *TurnOutcome `json:"last_turn,omitempty"`
	// Sandbox is the session's sandbox as it stands (its hosts, what it
	// refused so far), from its CLI's start and each turn's end; nil
	// without one.
	Sandbox *report.Sandbox `json:"sandbox,omitempty"`
	// CLIPid is the session's CLI process while one runs. A server killed
	// outright leaves it behind; the restored session ends it before it
	// resumes the CLI session (two processes on one session collide).
	CLIPid int `json:"cli_pid,omitempty"`
}

// TurnOutcome is how a turn of a session ended: the status and reason a
// job's attempt would have (succeeded, or failed with timeout,
// idle_timeout, api_error, usage_limit, max_turns, ...; interrupted).
type TurnOutcome struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// PendingPermission is a tool call waiting for a client's decision.
type PendingPermission struct {
	RequestID string          `json:"request_id"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

// PermissionDecision is a client's answer to a permission request.
type PermissionDecision struct {
	// Behavior is "allow" or "deny".
	Behavior string `json:"behavior"`
	// UpdatedInput is the input the tool runs with (allow; default: as asked).
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Message is what the model reads (deny).
	Message string `json:"message,omitempty"`
	// By says who decided, for the audit's rule and permission_resolved:
	// ByLink for a notification's approval link; empty is a client. It is
	// never read from a client's JSON.
	By string `json:"-"`
}

// SessionEvent is one thing that happened in a session. A server adds a
// sequence number and a time and sends {"seq","type","time", Data's fields}.
type SessionEvent struct {
	Type string
	// Data is a JSON object holding the type's fields.
	Data json.RawMessage
}

// SessionSummary is what Close leaves: the final state and what changed.
type SessionSummary struct {
	State SessionState `json:"session"`
	// Status and Reason are the session's outcome as a job's (its last turn's).
	Status       string `json:"status"`
	Reason       string `json:"reason,omitempty"`
	Commit       string `json:"commit,omitempty"`
	FilesChanged int    `json:"files_changed"`
	Insertions   int    `json:"insertions"`
	Deletions    int    `json:"deletions"`
	Transcript   string `json:"transcript,omitempty"`
	Patch        string `json:"patch,omitempty"`
	Warnings     string `json:"warnings,omitempty"`
}

// State returns a snapshot of the session.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stateLocked()
}

// emit sends an event; the caller holds mu.
func (s *Session) emit(typ string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"message": err.Error()}) // a map of strings always encodes
		typ = "error"
	}
	s.emitJSON(typ, b)
}

// emitJSON passes on an event whose data is encoded already.
func (s *Session) emitJSON(typ string, data []byte) {
	if s.o.OnEvent != nil {
		s.o.OnEvent(SessionEvent{Type: typ, Data: data})
	}
}

// setStatus changes the status and says so; the caller holds mu.
func (s *Session) setStatus(status string) {
	if s.st.Status == status {
		return
	}
	s.st.Status = status
	s.changed()
	s.emit("status_change", map[string]string{"status": status})
}

// changed wakes the switches waiting for the next change; the caller holds
// mu.
func (s *Session) changed() {
	if s.changeC != nil {
		close(s.changeC)
		s.changeC = nil
	}
}

// nextChange returns a channel closed at the next status change or init
// line; the caller holds mu.
func (s *Session) nextChange() <-chan struct{} {
	if s.changeC == nil {
		s.changeC = make(chan struct{})
	}
	return s.changeC
}

// account refreshes the state's accounting from the processes so far; the
// caller holds mu.
func (s *Session) account() {
	u, _ := s.t.usage()
	u.Add(s.base.usage)
	s.st.Usage, s.st.CostUSD, s.st.NumTurns = u, s.base.cost+s.t.maxCost, s.base.turns+s.t.turns
}

// sessionLabel is the name a session's commits and files go by.
func sessionLabel(name, id string) string {
	if strings.TrimSpace(name) != "" {
		return name
	}
	return id
}
