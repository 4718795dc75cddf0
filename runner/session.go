package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/sandbox"
	"github.com/pneuma-cli/pneuma/usage"
	"github.com/pneuma-cli/pneuma/worktree"
)

// A Session is a job you talk to: the job fields, worktree, policy, audit,
// accounting and stop ladder of a job, with turns that come from a client
// and permission prompts a client may answer. It uses the job lifecycle's
// stages: prepare (session_open.go), turns (this file), finish (Close).
type Session struct {
	o    SessionOptions
	plan SessionPlan
	git  *worktree.Manager
	tx   transcripts
	rec  *records
	box  *sandbox.Box // the session's sandbox (nil: none)

	// startMu orders Send's CLI starts and end: a session closing waits
	// for a start in progress, then stops what it started.
	startMu sync.Mutex
	// mu guards everything below, and serialises OnEvent calls so that
	// events reach the server in the order they happened.
	mu         sync.Mutex
	st         SessionState
	proc       *claude.Process
	readerDone chan struct{} // closed when the current process is fully read
	t          tally         // of the current process
	base       accounts      // of the session's earlier processes
	inflight   []string      // messages sent that no result answered yet
	resumed    bool          // the current process resumes a CLI session
	initSeen   bool          // the current process wrote its init line
	pending    map[string]*pendingPermission
	answered   map[string]bool
	lastChange string // the last content_update sent, to send only news
	closed     bool
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
	IsRoot      bool
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
	// CLIPid is the session's CLI process while one runs. A server killed
	// outright leaves it behind; the restored session ends it before it
	// resumes the CLI session (two processes on one session collide).
	CLIPid int `json:"cli_pid,omitempty"`
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
	State        SessionState `json:"session"`
	Commit       string       `json:"commit,omitempty"`
	FilesChanged int          `json:"files_changed"`
	Insertions   int          `json:"insertions"`
	Deletions    int          `json:"deletions"`
	Transcript   string       `json:"transcript,omitempty"`
	Patch        string       `json:"patch,omitempty"`
	Warnings     string       `json:"warnings,omitempty"`
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
	if s.o.OnEvent != nil {
		s.o.OnEvent(SessionEvent{Type: typ, Data: b})
	}
}

// setStatus changes the status and says so; the caller holds mu.
func (s *Session) setStatus(status string) {
	if s.st.Status == status {
		return
	}
	s.st.Status = status
	s.emit("status_change", map[string]string{"status": status})
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

// CheckRoots returns an *OutsideRootsError unless path resolves (symlinks
// followed) under one of roots; no roots allow any path.
func CheckRoots(path string, roots []string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !underRoots(real, roots) {
		return &OutsideRootsError{Repo: path, Roots: roots}
	}
	return nil
}

// underRoots reports whether path (symlinks resolved) is inside one of roots.
func underRoots(path string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(real, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) {
			return true
		}
	}
	return false
}

// OutsideRootsError is a repository outside the server's roots (403).
type OutsideRootsError struct {
	Repo  string
	Roots []string
}

func (e *OutsideRootsError) Error() string {
	return fmt.Sprintf("repository %s is not under any root (%s)", e.Repo, strings.Join(e.Roots, ", "))
}
