package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
)

// WebSocket close codes of the API.
const (
	// CloseUnauthorized: no valid auth (header or first message) in time.
	CloseUnauthorized websocket.StatusCode = 4001
	// CloseSlow: the client fell a bounded buffer behind; the reason is
	// {"last_seq":N}, the last event it was sent. It comes back with subscribe.
	CloseSlow websocket.StatusCode = 4008
)

const (
	// subscribeGrace is how long a new connection waits for a subscribe
	// before it sends a snapshot and follows from there instead.
	subscribeGrace = 200 * time.Millisecond
	// writeTimeout bounds one write to a client that stopped reading.
	writeTimeout = 30 * time.Second
)

// flushEvery paces a client's writes: a write follows the one before by at
// least this long, and takes every event that came meanwhile. Each write is
// a system call (and a wake-up of the reader), which is most of the cost of
// fan-out: at thousands of events/s a client gets a batch per write instead
// of an event per write. At a streaming model's pace (events a few ms apart
// or more) an event goes out at once. It adds at most this much to an
// event's latency. A variable for the fan-out bench alone
// (PNEUMA_BENCH_FLUSH), which weighs CPU against latency with it.
var flushEvery = 2 * time.Millisecond

// wsTarget is what a connection talks to: a session or a run.
type wsTarget interface {
	eventLog() *eventlog.Log
	// snapshot is the message sent to a client that does not subscribe.
	snapshot(lastSeq int64) any
	// handle acts on user_message, permission_response, interrupt,
	// set_model and set_permission_mode and returns the reply.
	handle(ctx context.Context, m clientMessage) (any, error)
}

func (s *Server) sessionWS(w http.ResponseWriter, r *http.Request) {
	if e := s.entryOf(w, r); e != nil {
		s.serveWS(w, r, sessionTarget{e})
	}
}

// wsConn is one client connection.
type wsConn struct {
	s      *Server
	conn   *websocket.Conn
	cork   *corkConn // conn's connection: a batch of events is one write
	target wsTarget
	// delivered is the seq of the last event written to the client;
	// deliveredMu guards sent, closed and renewed at each change of it.
	delivered   atomic.Int64
	deliveredMu sync.Mutex
	sent        chan struct{}
	acked       atomic.Int64
	// scope is the token's: below operate, the client only follows.
	scope Scope

	pumpStop context.CancelFunc
	pumpDone chan struct{}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request, t wsTarget) {
	cw := &corkWriter{ResponseWriter: w}
	conn, err := websocket.Accept(cw, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.AllowOrigins})
	if err != nil {
		return // Accept answered (403 for a foreign Origin)
	}
	conn.SetReadLimit(MaxBody)
	s.conns.Add(1)
	defer s.conns.Done()
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c := &wsConn{s: s, conn: conn, cork: cw.conn, target: t, sent: make(chan struct{})}
	defer c.stopPump()
	if sc, authed := r.Context().Value(authedKey{}).(Scope); authed {
		c.scope = sc
	} else if !c.authenticate(ctx) {
		return
	}
	setScope(r, c.scope) // for the access log
	msgs := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case msgs <- data:
			case <-ctx.Done():
				return
			}
		}
	}()
	c.loop(ctx, msgs)
	select {
	case <-s.ctx.Done():
		conn.Close(websocket.StatusGoingAway, "server stopping")
	default:
		conn.CloseNow()
	}
}

// authenticate reads the first message, which must be a valid auth.
func (c *wsConn) authenticate(ctx context.Context) bool {
	c.scope = c.s.readAuth(ctx, c.conn)
	return c.scope != ScopeNone
}

// readAuth reads a WebSocket's first message, which must be a valid auth,
// and returns its token's scope; else it closes conn with 4001 and returns
// ScopeNone. The deadline closes the connection itself: a Read whose
// context ends would drop it without the 4001. Every unauthenticated
// WebSocket, whether its session or run exists or not, goes through here,
// so an outsider cannot tell the two apart.
func (s *Server) readAuth(ctx context.Context, conn *websocket.Conn) Scope {
	timer := time.AfterFunc(s.cfg.AuthTimeout, func() {
		conn.Close(CloseUnauthorized, "no auth message within the time allowed")
	})
	defer timer.Stop()
	_, data, err := conn.Read(ctx)
	if err != nil {
		return ScopeNone
	}
	sc := ScopeNone
	if m, err := decodeClientMessage(data); err == nil && m.Type == "auth" {
		sc = s.scopeOf(m.Token)
	}
	if sc == ScopeNone {
		conn.Close(CloseUnauthorized, "the first message must be a valid auth")
		return ScopeNone
	}
	if !timer.Stop() {
		return ScopeNone // the deadline closed it meanwhile
	}
	return sc
}

// loop handles the client's messages. A subscribe in the first moments
// replays from the client's seq; otherwise the client gets a snapshot and
// follows from it.
func (c *wsConn) loop(ctx context.Context, msgs <-chan []byte) {
	grace := time.NewTimer(subscribeGrace)
	defer grace.Stop()
	started := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-grace.C:
			if !started {
				started = c.startWithSnapshot(ctx)
			}
		case data, ok := <-msgs:
			if !ok {
				return
			}
			m, err := decodeClientMessage(data)
			if err == nil && m.Type == "subscribe" {
				c.startPump(ctx, m.LastSeq)
				started = true
				continue
			}
			if !started {
				started = c.startWithSnapshot(ctx)
			}
			if err != nil {
				c.reply(ctx, errorReply(err, "invalid_message"))
				continue
			}
			c.handle(ctx, m)
		}
	}
}

func (c *wsConn) startWithSnapshot(ctx context.Context) bool {
	last := c.target.eventLog().LastSeq()
	c.reply(ctx, c.target.snapshot(last))
	c.startPump(ctx, last)
	return true
}

// handle answers one message other than subscribe.
func (c *wsConn) handle(ctx context.Context, m clientMessage) {
	switch m.Type {
	case "ping":
		c.reply(ctx, map[string]string{"type": "pong"})
	case "ack":
		c.acked.Store(m.LastSeq)
	case "auth":
		c.reply(ctx, map[string]string{"type": "error", "message": "already authenticated", "code": "invalid_message"})
	default:
		if c.scope < ScopeOperate {
			c.reply(ctx, map[string]string{"type": "error", "message": fmt.Sprintf("a %s token cannot send %s: it needs the operate scope", c.scope, m.Type), "code": "forbidden"})
			return
		}
		out, err := c.target.handle(ctx, m)
		if err != nil {
			out = errorReply(err, "rejected")
		}
		if r, ok := out.(eventReply); ok {
			c.awaitDelivered(ctx, r.seq)
			out = r.msg
		}
		c.reply(ctx, out)
	}
}

// eventReply is a reply that names an event of the log by its seq
// (message_accepted). The client is sent it only after that event: a client
// that tracks the last seq it saw (docs/serve.md) must not see a seq before
// the event that has it, or it would take the event for one it has seen.
type eventReply struct {
	seq int64
	msg any
}

// awaitDelivered waits until the event seq was written to the client, the
// pump stopped (the connection is ending), or a write's time passed (the
// pump's watchdog closes a connection stuck that long). Called from the
// connection's loop, which alone starts and stops the pump.
func (c *wsConn) awaitDelivered(ctx context.Context, seq int64) {
	timer := time.NewTimer(writeTimeout)
	defer timer.Stop()
	for {
		c.deliveredMu.Lock()
		sent := c.sent
		c.deliveredMu.Unlock()
		if c.delivered.Load() >= seq {
			return
		}
		select {
		case <-sent:
		case <-c.pumpDone:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// setDelivered records the last event written and wakes awaitDelivered.
func (c *wsConn) setDelivered(seq int64) {
	c.delivered.Store(seq)
	c.deliveredMu.Lock()
	close(c.sent)
	c.sent = make(chan struct{})
	c.deliveredMu.Unlock()
}

func errorReply(err error, code string) map[string]string {
	return map[string]string{"type": "error", "message": err.Error(), "code": code}
}

// reply writes one message that is not an event (it has no seq).
func (c *wsConn) reply(ctx context.Context, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	_ = c.conn.Write(wctx, websocket.MessageText, data) // a broken connection ends its reader, which closes the client
}

// startPump (re)starts sending the events after seq after.
func (c *wsConn) startPump(ctx context.Context, after int64) {
	c.stopPump()
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	c.pumpStop, c.pumpDone = stop, done
	sub := c.target.eventLog().Subscribe(after, c.s.cfg.Buffer)
	c.setDelivered(sub.Last())
	go func() {
		defer close(done)
		defer sub.Close()
		c.pump(pctx, sub)
	}()
}

func (c *wsConn) stopPump() {
	if c.pumpStop != nil {
		c.pumpStop()
		<-c.pumpDone
		c.pumpStop = nil
	}
}

// pump writes events until the context ends; a client that fell behind is
// closed with 4008 and the last seq it was sent. Each event's bytes are the
// log's, encoded once for every client; no lock is held while writing.
//
// Writes get a context without a deadline: for one with a deadline the
// WebSocket library arms and disarms a timer at every frame, which at
// fan-out rates costs more than the write. A watchdog armed once per batch
// closes a connection whose writes are stuck (a client that stopped
// reading with its TCP window full).
func (c *wsConn) pump(ctx context.Context, sub *eventlog.Subscription) {
	watchdog := time.AfterFunc(writeTimeout, func() { c.conn.CloseNow() })
	watchdog.Stop()
	defer watchdog.Stop()
	pace := time.NewTimer(0)
	defer pace.Stop()
	var last time.Time
	for {
		evs, err := sub.Next(ctx)
		if errors.Is(err, eventlog.ErrSlow) {
			c.s.countDropped()
			c.conn.Close(CloseSlow, fmt.Sprintf(`{"last_seq":%d}`, c.delivered.Load()))
			return
		}
		if err != nil {
			return // the log closed (the session ended) or the connection did
		}
		if wait := flushEvery - time.Since(last); wait > 0 {
			pace.Reset(wait)
			select {
			case <-pace.C:
			case <-ctx.Done():
				return
			}
			evs = append(evs, sub.Ready()...)
		}
		watchdog.Reset(writeTimeout)
		err = c.writeBatch(ctx, evs)
		watchdog.Stop()
		if err != nil {
			return
		}
		last = time.Now()
	}
}

// writeBatch writes events as one write to the socket.
func (c *wsConn) writeBatch(ctx context.Context, evs []eventlog.Event) error {
	c.cork.cork()
	for _, ev := range evs {
		if err := ctx.Err(); err != nil {
			c.cork.uncork()
			return err // stopped (a new subscribe, or the connection ends)
		}
		if err := c.conn.Write(context.Background(), websocket.MessageText, ev.Raw); err != nil {
			c.cork.uncork()
			return err
		}
	}
	if err := c.cork.uncork(); err != nil {
		return err
	}
	c.setDelivered(evs[len(evs)-1].Seq)
	c.s.countSent(len(evs))
	return nil
}

// sessionTarget is a session behind a WebSocket.
type sessionTarget struct{ e *entry }

func (t sessionTarget) eventLog() *eventlog.Log { return t.e.log }

func (t sessionTarget) snapshot(last int64) any {
	o := t.e.object()
	o.LastSeq = last
	return map[string]any{"type": "session_snapshot", "session": o, "last_seq": last}
}

func (t sessionTarget) handle(ctx context.Context, m clientMessage) (any, error) {
	switch m.Type {
	case "user_message":
		ref, err := t.e.send(context.WithoutCancel(ctx), m.Content, m.ClientMsgID)
		if err != nil {
			return nil, err
		}
		msg := map[string]any{"type": "message_accepted", "seq": ref.seq, "client_msg_id": m.ClientMsgID}
		return eventReply{seq: ref.seq, msg: msg}, nil
	case "permission_response":
		p := permissionRequest{Behavior: m.Behavior, UpdatedInput: m.UpdatedInput, Message: m.Message}
		if err := t.e.answer(m.RequestID, p); err != nil {
			return nil, err
		}
		return map[string]any{"type": "permission_accepted", "request_id": m.RequestID}, nil
	case "interrupt":
		if err := t.e.interrupt(); err != nil {
			return nil, err
		}
		return map[string]any{"type": "interrupt_sent"}, nil
	case "set_model":
		ack, err := t.e.setModel(ctx, m.Model)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "model_set", "model": m.Model, "pending": ack.Pending, "response": ack.Response}, nil
	case "set_permission_mode":
		ack, err := t.e.setPermissionMode(ctx, m.Mode)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "permission_mode_set", "mode": m.Mode, "pending": ack.Pending, "response": ack.Response}, nil
	}
	return nil, fmt.Errorf("%s is not a message for a session", m.Type)
}
