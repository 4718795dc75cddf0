package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/usage"
)

// sessionObject is a session as the API shows it.
type sessionObject struct {
	ID                 string              `json:"id"`
	CLISessionID       string              `json:"cli_session_id"`
	Name               string              `json:"name"`
	Status             string              `json:"status"`
	Repo               string              `json:"repo"`
	Branch             string              `json:"branch"`
	Worktree           string              `json:"worktree"`
	Model              string              `json:"model"`
	CreatedAt          time.Time           `json:"created_at"`
	LastSeq            int64               `json:"last_seq"`
	NumTurns           int                 `json:"num_turns"`
	CostUSD            float64             `json:"cost_usd"`
	Usage              usage.Tokens        `json:"usage"`
	MessageCount       int                 `json:"message_count"`
	PendingPermissions []PendingPermission `json:"pending_permissions"`
	// The final object of a closed session adds what it left behind.
	FilesChanged *int   `json:"files_changed,omitempty"`
	Insertions   *int   `json:"insertions,omitempty"`
	Deletions    *int   `json:"deletions,omitempty"`
	Commit       string `json:"commit,omitempty"`
	Transcript   string `json:"transcript,omitempty"`
	// Damage says why a damaged session could not be restored.
	Damage string `json:"damage,omitempty"`
	// Sandbox is the session's sandbox (absent without one): its rules
	// until its CLI starts, then also what it refused.
	Sandbox *report.Sandbox `json:"sandbox,omitempty"`
}

func (e *entry) object() sessionObject {
	st := e.snapshot()
	o := sessionObject{
		ID: e.id, CLISessionID: st.CLISessionID, Name: st.Name, Status: st.Status,
		Repo: st.Repo, Branch: st.Branch, Worktree: st.Worktree, Model: st.Model,
		CreatedAt: st.CreatedAt, LastSeq: e.log.LastSeq(), NumTurns: st.NumTurns,
		CostUSD: st.CostUSD, Usage: st.Usage, MessageCount: st.MessageCount,
		PendingPermissions: st.PendingPermissions, Damage: e.damage, Sandbox: st.Sandbox,
	}
	if j := st.Plan.Job; o.Sandbox == nil && j != nil && j.Sandbox.On() {
		o.Sandbox = &report.Sandbox{Network: j.Sandbox.Network, Read: j.Sandbox.Read, Write: j.Sandbox.Write}
	}
	if o.PendingPermissions == nil {
		o.PendingPermissions = []PendingPermission{}
	}
	e.mu.Lock()
	if f := e.final; f != nil {
		o.FilesChanged, o.Insertions, o.Deletions = &f.FilesChanged, &f.Insertions, &f.Deletions
		o.Commit, o.Transcript = f.Commit, f.Transcript
	}
	e.mu.Unlock()
	return o
}

// entryOf finds the {id} of the path, answering 404 itself.
func (s *Server) entryOf(w http.ResponseWriter, r *http.Request) *entry {
	id := r.PathValue("id")
	var e *entry
	if validID(id) {
		e = s.sessions.get(id)
	}
	if e == nil {
		writeError(w, http.StatusNotFound, "no session %q", id)
	}
	return e
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	spec, err := jobfile.DecodeSession(data)
	if err != nil {
		var de *jobfile.DecodeError
		if errors.As(err, &de) {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid session", Problems: problemsOf(de)})
			return
		}
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if s.cfg.Engine == nil {
		writeError(w, http.StatusNotImplemented, "%v", errNoEngine)
		return
	}
	s.cfg.Policy.capJob(&spec.Job)
	e, err := s.sessions.reserve()
	if errors.Is(err, errTooMany) {
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusTooManyRequests, "%d sessions already open (--max-sessions)", s.cfg.MaxSessions)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "create session: %v", err)
		return
	}
	e.op.Lock()
	// The session outlives this request: runner gets a context only a
	// server stop ends (and that goes through Shutdown).
	_, err = e.open(context.WithoutCancel(r.Context()), spec, nil)
	e.op.Unlock()
	if err != nil {
		s.sessions.drop(e)
		s.engineError(w, err)
		return
	}
	if err := e.save(); err != nil {
		s.cfg.Logf("session %s: %v", e.id, err)
	}
	writeJSON(w, http.StatusCreated, e.object())
}

// engineError maps runner's typed errors to statuses.
func (s *Server) engineError(w http.ResponseWriter, err error) {
	var oe *OutsideRootsError
	var de *jobfile.DecodeError
	var ce *runner.ConfigError
	switch {
	case errors.As(err, &oe):
		writeError(w, http.StatusForbidden, "%v", err)
	case errors.As(err, &ce): // the client's request (a missing repo, not a repository, a bad base)
		writeError(w, http.StatusBadRequest, "%v", err)
	case errors.As(err, &de):
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid session", Problems: problemsOf(de)})
	case errors.Is(err, errClosed), errors.Is(err, errDamaged), errors.Is(err, ErrPermissionResolved):
		writeError(w, http.StatusConflict, "%v", err)
	case errors.Is(err, ErrNoSuchPermission):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, errNoEngine):
		writeError(w, http.StatusNotImplemented, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	out := []sessionObject{}
	for _, e := range s.sessions.list() {
		out = append(out, e.object())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if e := s.entryOf(w, r); e != nil {
		writeJSON(w, http.StatusOK, e.object())
	}
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	if _, _, err := e.close(context.WithoutCancel(r.Context())); err != nil {
		s.engineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, e.object())
}

// messageRequest is POST /api/sessions/{id}/messages.
type messageRequest struct {
	Content     string `json:"content"`
	ClientMsgID string `json:"client_msg_id"`
	Wait        bool   `json:"wait"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	var req messageRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if req.Content == "" {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid message", Problems: []Problem{{Field: "content", Message: "must not be empty"}}})
		return
	}
	ref, err := e.send(context.WithoutCancel(r.Context()), req.Content, req.ClientMsgID)
	if err != nil {
		s.engineError(w, err)
		return
	}
	if !req.Wait {
		writeJSON(w, http.StatusAccepted, map[string]int64{"seq": ref.seq})
		return
	}
	t, err := e.waitTurn(r.Context(), ref)
	if err != nil {
		writeError(w, http.StatusGatewayTimeout, "waiting for the result of message %d: %v", ref.seq, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Seq    int64             `json:"seq"`
		Events []json.RawMessage `json:"events"`
		Result json.RawMessage   `json:"result"`
		// NextAfter is set when the events were cut at pageBytes.
		NextAfter int64 `json:"next_after,omitempty"`
	}{Seq: ref.seq, Events: raws(t.events), Result: t.result.Raw, NextAfter: t.nextAfter})
}

func (s *Server) interruptSession(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	if !decodeBody(w, r, &struct{}{}, true) {
		return
	}
	if err := e.interrupt(); err != nil {
		s.engineError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "interrupt sent"})
}

// interrupt ends the running turn. A closed or damaged session answers
// errClosed or errDamaged; an open one whose CLI is not running (restored,
// before its next message) has nothing to interrupt.
func (e *entry) interrupt() error {
	if sess := e.current(); sess != nil {
		return sess.Interrupt()
	}
	switch st := e.snapshot().Status; {
	case st == StatusDamaged:
		return errDamaged
	case isTerminal(st):
		return errClosed
	}
	return nil
}

// permissionRequest answers one permission_request.
type permissionRequest struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	Message      string          `json:"message,omitempty"`
}

func (p permissionRequest) check() []Problem {
	if p.Behavior != "allow" && p.Behavior != "deny" {
		return []Problem{{Field: "behavior", Message: `must be "allow" or "deny"`}}
	}
	return nil
}

func (s *Server) answerPermission(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	var req permissionRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	if probs := req.check(); probs != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid permission response", Problems: probs})
		return
	}
	if err := e.answer(r.PathValue("request_id"), req); err != nil {
		s.engineError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"request_id": r.PathValue("request_id"), "behavior": req.Behavior})
}

// answer routes a client's decision to the session.
func (e *entry) answer(requestID string, p permissionRequest) error {
	sess := e.current()
	if sess == nil {
		return ErrNoSuchPermission
	}
	return sess.Answer(requestID, PermissionDecision{Behavior: p.Behavior, UpdatedInput: p.UpdatedInput, Message: p.Message})
}

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	if e := s.entryOf(w, r); e != nil {
		s.longPoll(w, r, e.log)
	}
}

// pageBytes bounds the events of one long-poll answer; an event larger
// than it is a page of its own.
const pageBytes = 1 << 20

// longPoll is GET .../events?after=SEQ&wait=30s: a page of the events after
// SEQ, waiting up to wait (at most 60s) for one. The answer is
// {"events":[...],"next_after":N,"last_seq":M}: the next poll asks after N,
// and N < M says more events wait.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, log *eventlog.Log) {
	q := r.URL.Query()
	var after int64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil || n < 0 {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid query", Problems: []Problem{{Field: "after", Message: "must be a seq (0 or more)"}}})
			return
		}
		after = n
	}
	var wait time.Duration
	if ws := q.Get("wait"); ws != "" {
		d, err := time.ParseDuration(ws)
		if err != nil || d < 0 {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid query", Problems: []Problem{{Field: "wait", Message: `must be a duration ("30s")`}}})
			return
		}
		wait = min(d, 60*time.Second)
	}
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	evs, err := log.Wait(ctx, after, pageBytes)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq
	}
	writePage(w, evs, next, log.LastSeq())
}

// writePage writes a page of events as they are in the log, without
// decoding or copying them again.
func writePage(w http.ResponseWriter, evs []eventlog.Event, next, last int64) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"events":[`)
	for i, ev := range evs {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.Write(ev.Raw)
	}
	fmt.Fprintf(bw, `],"next_after":%d,"last_seq":%d}`+"\n", next, last)
	_ = bw.Flush() // the status is sent; a client gone mid-answer has nothing more to hear
}

func raws(evs []eventlog.Event) []json.RawMessage {
	out := make([]json.RawMessage, len(evs))
	for i, ev := range evs {
		out[i] = json.RawMessage(ev.Raw)
	}
	return out
}
