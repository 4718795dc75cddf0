package notify

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/runner"
)

// Link makes the approval link of a session's permission request: its URL
// and expiry, or "" when the server makes none (no --public-url).
type Link func(session, requestID string) (url string, expires time.Time)

// Sessions turns a server's session events into notifications:
// permission_request when a tool call waits for a person, session_idle
// when a turn ended and the session waits for its next message. Create it
// with Notifier.Sessions; Event is safe for concurrent use.
type Sessions struct {
	n       *Notifier
	link    Link
	console func(session string) string

	mu    sync.Mutex
	ended map[string]*runner.TurnOutcome // sessions whose turn ended since they were last idle
}

// Sessions returns n's session notifications; link (nil for none) makes
// approval links, console (nil for none) a session's console URL.
func (n *Notifier) Sessions(link Link, console func(session string) string) *Sessions {
	return &Sessions{n: n, link: link, console: console, ended: map[string]*runner.TurnOutcome{}}
}

// Event notifies what session id's event ev tells people, if anything.
func (s *Sessions) Event(id string, ev runner.SessionEvent) {
	if s == nil || !s.n.Enabled() {
		return
	}
	switch ev.Type {
	case "permission_request":
		s.permission(id, ev.Data)
	case "turn_end":
		var out runner.TurnOutcome
		_ = json.Unmarshal(ev.Data, &out)
		s.mu.Lock()
		s.ended[id] = &out
		s.mu.Unlock()
	case "status_change":
		s.status(id, ev.Data)
	}
}

func (s *Sessions) permission(id string, data json.RawMessage) {
	if !s.n.Wants(EventPermissionRequest) {
		return
	}
	var p runner.PendingPermission
	if err := json.Unmarshal(data, &p); err != nil {
		return
	}
	perm := &Permission{RequestID: p.RequestID, Tool: p.ToolName, Input: string(p.Input)}
	if s.link != nil {
		if u, exp := s.link(id, p.RequestID); u != "" {
			perm.ApproveURL, perm.ExpiresAt = u, &exp
		}
	}
	s.n.Notify(Notification{Event: EventPermissionRequest, Session: id, Permission: perm, ConsoleURL: s.consoleURL(id),
		Title: fmt.Sprintf("pneuma session %s asks to use %s", id, p.ToolName)})
}

// status sends session_idle when a session whose turn ended turns idle
// (a queued message would start the next turn instead), and forgets a
// closed session.
func (s *Sessions) status(id string, data json.RawMessage) {
	var st struct {
		Status string `json:"status"`
	}
	_ = json.Unmarshal(data, &st)
	s.mu.Lock()
	out, ended := s.ended[id]
	if st.Status == runner.SessionIdle || st.Status == runner.SessionClosed || st.Status == runner.SessionFailed {
		delete(s.ended, id)
	}
	s.mu.Unlock()
	if st.Status != runner.SessionIdle || !ended {
		return
	}
	nt := Notification{Event: EventSessionIdle, Session: id, ConsoleURL: s.consoleURL(id),
		Title: fmt.Sprintf("pneuma session %s waits for your next message", id)}
	if out != nil {
		nt.Status, nt.Reason, nt.Error = out.Status, out.Reason, out.Error
	}
	s.n.Notify(nt)
}

func (s *Sessions) consoleURL(id string) string {
	if s.console == nil {
		return ""
	}
	return s.console(id)
}
