package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
)

// Permission bridging: a tool call that the policy and the permission mode
// leave open becomes a permission request to the session's clients. The
// first answer decides; with none within the permission timeout, pneuma
// denies with a message the model reads. The audit log says who decided.

// pendingPermission is a request waiting for its answer.
type pendingPermission struct {
	PendingPermission
	answer chan resolution // one slot: the first answer
}

// resolution is a decision and who made it.
type resolution struct {
	PermissionDecision
	by string
}

// Who decided a permission request.
const (
	byClient  = "client"
	byTimeout = "timeout"
	byServer  = "server" // the session closed, or the CLI withdrew the request
	// ByLink is a person who followed a notification's approval link.
	ByLink = "link"
)

// ask is the session's permission prompt: it blocks the CLI's request until
// a client answers, the timeout passes, or the request is withdrawn.
func (s *Session) ask(ctx context.Context, req *claude.ControlRequest) claude.ControlResponse {
	p := &pendingPermission{answer: make(chan resolution, 1), PendingPermission: PendingPermission{
		RequestID: req.RequestID, ToolName: req.ToolName, Input: req.Input, ToolUseID: req.ToolUseID}}
	s.mu.Lock()
	s.pending[p.RequestID] = p
	s.st.PendingPermissions = append(s.st.PendingPermissions, p.PendingPermission)
	s.emit("permission_request", p.PendingPermission)
	s.setStatus(SessionWaiting)
	s.mu.Unlock()

	wait := s.plan.PermissionTimeout
	t := time.NewTimer(wait)
	defer t.Stop()
	var d PermissionDecision
	by := byClient
	select {
	case r := <-p.answer:
		d, by = r.PermissionDecision, r.by
	case <-t.C:
		by, d = byTimeout, PermissionDecision{Behavior: "deny",
			Message: fmt.Sprintf("No one answered this permission request within %s, so pneuma denied it. Do not retry the same call; continue without it or stop and explain what you needed.", wait)}
		s.resolve(p.RequestID, d, by)
	case <-ctx.Done():
		by, d = byServer, PermissionDecision{Behavior: "deny", Message: "The permission request was withdrawn."}
		s.resolve(p.RequestID, d, by)
	}
	return s.decide(req, d, by)
}

// decide turns a decision into the CLI's answer and audits it.
func (s *Session) decide(req *claude.ControlRequest, d PermissionDecision, by string) claude.ControlResponse {
	if d.Behavior != "allow" {
		s.rec.audit.decided(req.ToolUseID, decision{decisionDeny, by, "can_use_tool", false})
		msg := d.Message
		if msg == "" {
			msg = "The user denied this tool call."
		}
		return claude.Deny(msg, false)
	}
	edited := len(d.UpdatedInput) > 0
	s.rec.audit.decided(req.ToolUseID, decision{decisionAllow, by, "can_use_tool", edited})
	if !edited {
		return claude.Allow(nil) // nil echoes the request's input, which the CLI requires
	}
	return claude.Allow(d.UpdatedInput)
}

// Answer decides a pending permission request. The first answer wins; a
// later one gets ErrPermissionResolved.
func (s *Session) Answer(requestID string, d PermissionDecision) error {
	if d.Behavior != "allow" && d.Behavior != "deny" {
		return fmt.Errorf("behavior must be allow or deny, not %q", d.Behavior)
	}
	if len(d.UpdatedInput) > 0 && !json.Valid(d.UpdatedInput) {
		return fmt.Errorf("updated_input is not valid JSON")
	}
	by := byClient
	if d.By == ByLink {
		by = ByLink
	}
	p, err := s.resolve(requestID, d, by)
	if err != nil {
		return err
	}
	p.answer <- resolution{d, by}
	return nil
}

// resolve takes a request out of the pending ones and says how it was
// decided. It fails when it was decided already.
func (s *Session) resolve(requestID string, d PermissionDecision, by string) (*pendingPermission, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[requestID]
	if !ok {
		if s.answered[requestID] {
			return nil, ErrPermissionResolved
		}
		return nil, ErrNoSuchPermission
	}
	delete(s.pending, requestID)
	s.answered[requestID] = true
	s.st.PendingPermissions = slices.DeleteFunc(s.st.PendingPermissions, func(pp PendingPermission) bool { return pp.RequestID == requestID })
	s.emit("permission_resolved", map[string]string{"request_id": requestID, "behavior": d.Behavior, "by": by})
	if len(s.pending) == 0 && s.st.Status == SessionWaiting {
		s.setStatus(SessionRunning)
	}
	return p, nil
}

// denyPending denies every pending request (the session is closing); the
// caller holds mu.
func (s *Session) denyPending() {
	for id, p := range s.pending {
		delete(s.pending, id)
		s.answered[id] = true
		d := PermissionDecision{Behavior: "deny", Message: "The session was closed."}
		s.emit("permission_resolved", map[string]string{"request_id": id, "behavior": "deny", "by": byServer})
		p.answer <- resolution{d, byServer}
	}
	s.st.PendingPermissions = []PendingPermission{}
}
