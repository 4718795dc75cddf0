package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// CloseNotFound closes a WebSocket whose session or run does not exist;
// it is sent only after the client authenticated.
const CloseNotFound websocket.StatusCode = 4004

// gate is the server-wide cap on agents at work: every open session holds
// one slot and every unfinished run as many as its concurrency, against
// Config.MaxJobs (usage limits are per account, not per run).
type gate struct {
	mu sync.Mutex
	// pending are sessions being opened (not yet in the registry).
	pending int
}

// used counts the slots taken; the caller holds g.mu.
func (s *Server) slotsUsed() int {
	return s.sessions.active() + s.runs.slots() + s.gate.pending
}

// admitSession checks a create-session request against the policy and the
// server-wide cap before createSession opens it.
func (s *Server) admitSession(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(data))
	spec, err := jobfile.DecodeSession(data)
	if err != nil {
		s.createSession(w, r) // it answers the decoding problems
		return
	}
	c := policyCheck{p: &s.cfg.Policy, roots: s.cfg.Roots, dir: s.cfg.WorkDir, state: s.cfg.StateDir}
	if err := c.session(spec); err != nil {
		policyError(w, err, "invalid session")
		return
	}
	// The CLI resumes any session it finds in its projects (the operator's
	// other conversations, in this repository or by id alone): a client
	// resumes only what one of the server's sessions holds.
	if spec.Resume != "" && !s.sessions.ownsCLISession(spec.Resume) {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid session", Problems: []Problem{{Field: "resume",
			Message: fmt.Sprintf("%.100q is not the CLI session of a session of this server", spec.Resume)}}})
		return
	}
	s.gate.mu.Lock()
	if s.slotsUsed() >= s.cfg.MaxJobs {
		s.gate.mu.Unlock()
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusTooManyRequests, "%d sessions and jobs already at work (--max-jobs)", s.cfg.MaxJobs)
		return
	}
	// pending holds the slot until createSession has registered the
	// session; meanwhile it counts twice (pending and starting), which
	// errs toward refusing, never toward exceeding the cap.
	s.gate.pending++
	s.gate.mu.Unlock()
	defer func() {
		s.gate.mu.Lock()
		s.gate.pending--
		s.gate.mu.Unlock()
	}()
	s.createSession(w, r)
}

// reserveSlots reserves slots for a run of concurrency c: as many as are
// free, up to c; 0 means none is free. They are pending until
// releaseSlots hands them to the registered run.
func (s *Server) reserveSlots(c int) int {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	n := max(min(c, s.cfg.MaxJobs-s.slotsUsed()), 0)
	s.gate.pending += n
	return n
}

// releaseSlots ends a reservation; register (if any) makes the run that
// holds them count instead, under the same lock.
func (s *Server) releaseSlots(n int, register func()) {
	s.gate.mu.Lock()
	defer s.gate.mu.Unlock()
	s.gate.pending -= n
	if register != nil {
		register()
	}
}

// policyError answers a PolicyError 403 naming its field, a NameError 400.
func policyError(w http.ResponseWriter, err error, what string) bool {
	var pe *PolicyError
	var ne *NameError
	switch {
	case errors.As(err, &pe):
		writeJSON(w, http.StatusForbidden, apiError{Error: "refused by the server's policy: " + pe.Error(), Problems: []Problem{{Field: pe.Field, Message: pe.Reason}}})
	case errors.As(err, &ne):
		writeJSON(w, http.StatusBadRequest, apiError{Error: what, Problems: []Problem{ne.Problem}})
	default:
		return false
	}
	return true
}

func (s *Server) sessionExists(r *http.Request) bool {
	id := r.PathValue("id")
	return validID(id) && s.sessions.get(id) != nil
}

func (s *Server) runExists(r *http.Request) bool {
	id := r.PathValue("id")
	return validID(id) && s.runs.get(id) != nil
}

// isHandshake reports whether r is a well-formed WebSocket handshake; any
// other request without a token gets a 401 like every route.
func isHandshake(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade") &&
		r.Header.Get("Sec-WebSocket-Key") != "" && r.Header.Get("Sec-WebSocket-Version") == "13"
}

// blindWS answers an unauthenticated upgrade for a session or run that
// does not exist exactly as for one that does, up to the auth (the same
// readAuth, its deadline and its 4001, counted among the connections
// Shutdown waits for): only an authenticated client hears that it does
// not exist (4004).
func (s *Server) blindWS(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowOrigins})
	if err != nil {
		return
	}
	conn.SetReadLimit(MaxBody)
	s.conns.Add(1)
	defer s.conns.Done()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if s.readAuth(ctx, conn) == ScopeNone {
		return
	}
	conn.Close(CloseNotFound, "no such session or run")
}
