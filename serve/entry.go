package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
	"github.com/pneuma-cli/pneuma/runner"
)

// entry is one session of the registry: the runner session while it is
// open, its event log, and what serve itself owns (client_msg_id
// deduplication, turn counting for wait, session.json).
type entry struct {
	cfg *Config
	id  string
	log *eventlog.Log

	// op serialises the calls that change the session's life (send, close,
	// shutdown), so user_message seqs are in the order of Send calls.
	op sync.Mutex

	mu      sync.Mutex
	sess    Session // nil before a restored session's next message, and after close
	state   SessionState
	final   *SessionSummary
	msgs    map[string]msgRef
	sent    int     // user messages sent
	results []int64 // seq of each turn's end: its result event, or a turn_end without one
	// resulted: the latest turn's result is in results; its turn_end is not another turn.
	resulted bool
	dirty    chan struct{}
	stop     chan struct{}
	saving   sync.WaitGroup
	// damage says why a damaged session could not be restored.
	damage string
}

// msgRef is what a client_msg_id was answered.
type msgRef struct {
	seq  int64
	turn int
}

var (
	errClosed   = errors.New("session is closed")
	errDamaged  = errors.New("session is damaged")
	errNoEngine = errors.New("this server cannot open sessions (no session engine)")
)

func newEntry(cfg *Config, id string, log *eventlog.Log) *entry {
	return &entry{cfg: cfg, id: id, log: log, msgs: map[string]msgRef{}, dirty: make(chan struct{}, 1)}
}

// snapshot is the session's state as it stands.
func (e *entry) snapshot() SessionState {
	e.mu.Lock()
	sess, st := e.sess, e.state
	e.mu.Unlock()
	if sess != nil {
		st = sess.State()
		st.ID = e.id
	}
	return st
}

// eventObject builds {"type":T,"time":...,<data's fields>} on one line.
func eventObject(typ string, t time.Time, data []byte) []byte {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		wrapped, _ := json.Marshal(map[string]json.RawMessage{"data": orNull(data)})
		data = wrapped
	}
	if bytes.IndexByte(data, '\n') >= 0 {
		var buf bytes.Buffer
		_ = json.Compact(&buf, data) // data comes from json.Marshal: it is valid JSON
		data = buf.Bytes()
	}
	b := make([]byte, 0, len(data)+64)
	b = append(b, `{"type":`...)
	b, _ = appendJSONString(b, typ)
	b = append(b, `,"time":"`...)
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	if len(data) > 2 {
		b = append(b, ',')
		b = append(b, data[1:]...)
	} else {
		b = append(b, '}')
	}
	return b
}

func orNull(b []byte) json.RawMessage {
	if len(b) == 0 || !json.Valid(b) {
		return json.RawMessage("null")
	}
	return b
}

func appendJSONString(b []byte, s string) ([]byte, error) {
	q, err := json.Marshal(s)
	return append(b, q...), err
}

// append writes one of serve's own events to the log.
func (e *entry) append(typ string, fields any) (int64, error) {
	data, err := json.Marshal(fields)
	if err != nil {
		return 0, err
	}
	return e.log.Append(typ, eventObject(typ, time.Now(), data))
}

// onEvent is runner's OnEvent: into the log, and session.json is saved
// soon after a change of status or a result.
func (e *entry) onEvent(ev SessionEvent) {
	e.cfg.sessionEvent(e.id, ev)
	seq, err := e.log.Append(ev.Type, eventObject(ev.Type, time.Now(), ev.Data))
	if err != nil {
		e.cfg.Logf("session %s: event %s: %v", e.id, ev.Type, err)
		return
	}
	switch ev.Type {
	case "result":
		e.mu.Lock()
		e.results = append(e.results, seq)
		e.resulted = true
		e.mu.Unlock()
		e.markDirty()
	case "turn_end":
		// A turn ends with its result and then turn_end, or (cut by a
		// timeout or a crash) with turn_end alone: then that is its end.
		e.mu.Lock()
		if !e.resulted {
			e.results = append(e.results, seq)
		}
		e.resulted = false
		e.mu.Unlock()
		e.markDirty()
	case "status_change", "permission_request", "permission_resolved", "session_init", "cli_exited":
		e.markDirty()
	}
}

func (e *entry) markDirty() {
	select {
	case e.dirty <- struct{}{}:
	default:
	}
}

// startSaver saves session.json after changes, outside OnEvent (which must
// not call back into the session).
func (e *entry) startSaver() {
	e.stop = make(chan struct{})
	e.saving.Add(1)
	go func(stop <-chan struct{}) {
		defer e.saving.Done()
		for {
			select {
			case <-stop:
				return
			case <-e.dirty:
				if err := e.save(); err != nil {
					e.cfg.Logf("session %s: %v", e.id, err)
				}
			}
		}
	}(e.stop)
}

func (e *entry) stopSaver() {
	if e.stop != nil {
		close(e.stop)
		e.saving.Wait()
		e.stop = nil
	}
}

// save writes session.json.
func (e *entry) save() error {
	st := e.snapshot()
	e.mu.Lock()
	sv := saved{State: st, Final: e.final}
	e.mu.Unlock()
	data, err := json.MarshalIndent(sv, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(runner.StateDir(e.cfg.StateDir).Session(e.id).SessionFile(), data)
}

// open opens the runner session (a new one, or a restored one at its next
// message); called with op held.
func (e *entry) open(ctx context.Context, spec *SessionSpec, restore *SessionState) (Session, error) {
	if e.cfg.Engine == nil {
		return nil, errNoEngine
	}
	sess, err := e.cfg.Engine.Open(ctx, spec, SessionOptions{
		ID:      e.id,
		Dir:     runner.StateDir(e.cfg.StateDir).Session(e.id),
		WorkDir: e.cfg.WorkDir,
		Roots:   e.cfg.Roots,
		Binary:  e.cfg.Binary,
		Environ: e.cfg.Environ,
		OnEvent: e.onEvent,
		Restore: restore,
		Gate:    e.cfg.gate,
	})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.sess = sess
	e.mu.Unlock()
	e.startSaver()
	return sess, nil
}

// live returns the open session, reopening a restored one; called with op held.
func (e *entry) live(ctx context.Context) (Session, error) {
	e.mu.Lock()
	sess, st := e.sess, e.state
	e.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	if st.Status == StatusDamaged {
		return nil, fmt.Errorf("%w (%s): its files are kept for you to look at", errDamaged, e.damage)
	}
	if isTerminal(st.Status) {
		return nil, errClosed
	}
	return e.open(ctx, nil, &st) // a restore reopens the saved plan
}

// send writes the user_message event, then hands the turn to the session.
// A client_msg_id already seen gets its first answer and nothing is sent.
func (e *entry) send(ctx context.Context, content, clientMsgID string) (msgRef, error) {
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	ref, dup := e.msgs[clientMsgID]
	e.mu.Unlock()
	if dup && clientMsgID != "" {
		return ref, nil
	}
	sess, err := e.live(ctx)
	if err != nil {
		return msgRef{}, err
	}
	seq, err := e.append("user_message", struct {
		Content     string `json:"content"`
		ClientMsgID string `json:"client_msg_id,omitempty"`
	}{content, clientMsgID})
	if err != nil {
		return msgRef{}, err
	}
	if err := sess.Send(content); err != nil {
		_, _ = e.append("error", map[string]string{"message": fmt.Sprintf("message %d not sent: %v", seq, err), "code": "send_failed"})
		return msgRef{}, fmt.Errorf("send: %w", err)
	}
	e.mu.Lock()
	e.sent++
	ref = msgRef{seq: seq, turn: e.sent}
	if clientMsgID != "" {
		e.msgs[clientMsgID] = ref
	}
	e.mu.Unlock()
	return ref, nil
}

// turn is the answer to a message sent with wait: the turn's events, at
// most pageBytes of them (or one larger event), and its result. When the
// events were cut, nextAfter is the seq of the last one given: the long
// poll continues from there.
type turn struct {
	events    []eventlog.Event
	result    eventlog.Event
	nextAfter int64
}

// waitTurn returns the events of a message's turn once its result (the
// turn-th result of the session) is in: its user_message, then what the log
// holds after both that message and the previous turn's result, up to this
// turn's result. A message sent while another turn runs is queued by the CLI,
// so the tail of that other turn is left out.
func (e *entry) waitTurn(ctx context.Context, ref msgRef) (turn, error) {
	for {
		last := e.log.LastSeq()
		e.mu.Lock()
		var resultSeq, prevSeq int64
		if len(e.results) >= ref.turn {
			resultSeq = e.results[ref.turn-1]
			if ref.turn > 1 {
				prevSeq = e.results[ref.turn-2]
			}
		}
		e.mu.Unlock()
		if resultSeq > 0 {
			e.settle()
			return e.turnEvents(ref.seq, prevSeq, resultSeq)
		}
		if err := ctx.Err(); err != nil {
			return turn{}, err
		}
		// onEvent records a result just after appending it: a short wait
		// covers the moment between the two.
		wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		_, err := e.log.Wait(wctx, last, 1) // only to wait: a page of one event
		cancel()
		if err != nil {
			return turn{}, err
		}
	}
}

// turnEvents reads the log from the user_message at msgSeq through result
// once, a page at a time, leaving out what came between them up to
// prevResult (the end of the turn that ran when the message came), and
// stops before the events pass pageBytes.
func (e *entry) turnEvents(msgSeq, prevResult, result int64) (turn, error) {
	var t turn
	var size int
	for after := msgSeq - 1; after < result; {
		evs, err := e.log.ReadPage(after, int(result-after), pageBytes)
		if err != nil {
			return turn{}, err
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Seq > msgSeq && ev.Seq <= prevResult {
				continue
			}
			if len(t.events) > 0 && size+len(ev.Raw) > pageBytes {
				t.nextAfter = t.events[len(t.events)-1].Seq
				break
			}
			t.events = append(t.events, ev)
			size += len(ev.Raw)
		}
		if t.nextAfter > 0 {
			break
		}
		after = evs[len(evs)-1].Seq
	}
	if n := len(t.events); n > 0 && t.events[n-1].Seq == result {
		t.result = t.events[n-1]
		return t, nil
	}
	evs, err := e.log.Read(result-1, 1)
	if err != nil || len(evs) == 0 {
		return turn{}, fmt.Errorf("read the result of the turn (event %d): %v", result, err)
	}
	t.result = evs[0]
	return t, nil
}

// settle returns once the session has finished emitting what ends a turn.
// The session emits a turn's result, its turn_end and the status after them
// under one lock, which State takes too; so a client answered after settle
// that sends its next message at once cannot slip that user_message in
// between them (a log reading "idle" after it).
func (e *entry) settle() {
	if s := e.current(); s != nil {
		s.State()
	}
}

// current returns the open session, or nil.
func (e *entry) current() Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sess
}

// close ends the session for good (DELETE).
func (e *entry) close(ctx context.Context) (SessionState, *SessionSummary, error) {
	e.op.Lock()
	defer e.op.Unlock()
	e.mu.Lock()
	final := e.final
	e.mu.Unlock()
	if final != nil {
		return final.State, final, nil
	}
	sess, err := e.live(ctx)
	if err != nil {
		return SessionState{}, nil, err
	}
	sum, err := sess.Close(ctx)
	if err != nil {
		return SessionState{}, nil, fmt.Errorf("close session %s: %w", e.id, err)
	}
	sum.State.ID = e.id
	if !isTerminal(sum.State.Status) {
		sum.State.Status = StatusClosed
	}
	e.stopSaver()
	e.mu.Lock()
	e.sess, e.state, e.final = nil, sum.State, &sum
	e.mu.Unlock()
	serr := e.save()
	return sum.State, &sum, errors.Join(serr, e.log.Close())
}

// shutdown stops the session for a server stop: work committed, worktree
// kept, state saved for the next start.
func (e *entry) shutdown(ctx context.Context) error {
	e.op.Lock()
	defer e.op.Unlock()
	sess := e.current()
	var err error
	if sess != nil {
		err = sess.Shutdown(ctx)
		st := sess.State()
		st.ID = e.id
		e.stopSaver()
		e.mu.Lock()
		e.sess, e.state = nil, st
		e.mu.Unlock()
		err = errors.Join(err, e.save())
	}
	return errors.Join(err, e.log.Close())
}
