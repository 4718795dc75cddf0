// Package eventlog is the ordered, durable event log of one session or run:
// seq from 1, gapless, never reused, appended to events.jsonl and fsync'd at
// every result. Readers replay from any seq and then follow live events; a
// follower that falls a bounded buffer behind is dropped, never waited for.
//
// Memory stays bounded: the log keeps only the file offset of each event
// (8 bytes) and reads replays back from the file (the page cache).
package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Event is one line of the log: its seq, type and the encoded JSON object
// {"seq":N,"type":T,"time":...,...} (without the newline).
type Event struct {
	Seq  int64
	Type string
	Raw  json.RawMessage
}

// ErrClosed is returned by Append on a closed log.
var ErrClosed = errors.New("event log closed")

// Log is one events.jsonl. It is safe for concurrent use.
type Log struct {
	path string
	// durable says which event types are fsync'd as soon as written.
	durable func(typ string) bool

	mu      sync.Mutex
	w       *os.File // append handle
	offsets []int64  // offsets[i] is where seq i+1 starts; offsets[len] is the end
	subs    map[*Subscription]struct{}
	notify  chan struct{} // closed and replaced at an append that a Wait is blocked on (long-poll)
	waiting int           // Wait calls blocked on notify
	closed  bool
	buf     []byte
	maxLine int
	// lag, when set, groups the fsyncs of durable events (SyncWithin):
	// lagging is the pending sync's timer, syncErr its failure, reported
	// by the next durable Append or by Close.
	lag     time.Duration
	lagging *time.Timer
	syncErr error
}

// SyncWithin makes a durable event reach the disk within d of its Append,
// with one fsync for all those appended in that time, instead of an fsync
// before Append returns. What a crash of the machine (not of the process:
// every event is written to the kernel before Append returns) can lose is
// then the durable events of the last d. A run's log sets it: results
// finish by the dozen a second at scale, and an fsync each was a tenth of
// pneuma's own CPU; a server's logs do not.
func (l *Log) SyncWithin(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lag = d
}

// lateSync is the grouped fsync SyncWithin schedules.
func (l *Log) lateSync() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lagging = nil
	if l.closed {
		return
	}
	if err := l.w.Sync(); err != nil && l.syncErr == nil {
		l.syncErr = err
	}
}

// MaxLine is the longest event the log writes and reads back, without its
// newline: twice the longest line of the CLI's stream that pneuma decodes
// (claude.DefaultMaxLineBytes, 64 MiB), so that any event made of one CLI
// line fits. Append refuses a longer event; Open fails on a longer line with
// a DamageError naming the file and line. Reading a line never holds more
// than its first bytes in memory.
const MaxLine = 128 << 20

// scanBuffer is the read buffer of Open's scan; longer lines are read past
// in pieces of this size.
const scanBuffer = 256 << 10

// DamageError is a log whose complete lines are not events 1, 2, 3...: a
// line that is not an event, a seq out of order, or a line over the limit.
type DamageError struct {
	Path string
	Line int // 1-based
	Err  error
}

func (e *DamageError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

func (e *DamageError) Unwrap() error { return e.Err }

// Open opens (creating if needed) the log at path, reloading what is there.
// A torn last line (a crash mid-write) is dropped and the log continues at
// the seq after the last complete line; any other damage is a *DamageError
// and the file is left as it is (Salvage reads what comes before it).
// durable reports which event types are synced to disk when appended (nil:
// none; Close always syncs).
func Open(path string, durable func(typ string) bool) (*Log, error) {
	return openWith(path, durable, scanBuffer, MaxLine)
}

// openCapped is Open with another line limit (tests).
func openCapped(path string, durable func(typ string) bool, maxLine int) (*Log, error) {
	return openWith(path, durable, scanBuffer, maxLine)
}

func openWith(path string, durable func(typ string) bool, bufSize, maxLine int) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create event log dir: %w", err)
	}
	w, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	offsets, end, err := scan(w, path, bufSize, maxLine)
	if err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Truncate(end); err != nil {
		w.Close()
		return nil, fmt.Errorf("drop torn line of %s: %w", path, err)
	}
	if _, err := w.Seek(end, io.SeekStart); err != nil {
		w.Close()
		return nil, fmt.Errorf("seek %s: %w", path, err)
	}
	if durable == nil {
		durable = func(string) bool { return false }
	}
	return &Log{path: path, durable: durable, w: w, offsets: append(offsets, end), maxLine: maxLine,
		subs: map[*Subscription]struct{}{}, notify: make(chan struct{})}, nil
}

// Salvage opens a log read-only and closed: the events before its first
// damaged line (all of them when there is none) replay; nothing is written
// and the file is not changed. It is how a damaged session stays readable.
func Salvage(path string) (*Log, error) { return salvageWith(path, scanBuffer, MaxLine) }

func salvageWith(path string, bufSize, maxLine int) (*Log, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	defer f.Close()
	offsets, end, err := scan(f, path, bufSize, maxLine)
	var de *DamageError
	if err != nil && !errors.As(err, &de) {
		return nil, err
	}
	notify := make(chan struct{})
	close(notify)
	return &Log{path: path, durable: func(string) bool { return false }, offsets: append(offsets, end),
		maxLine: maxLine, subs: map[*Subscription]struct{}{}, notify: notify, closed: true}, nil
}

// Empty is a closed log without events at path (which it does not open):
// what a session whose log cannot be read at all replays.
func Empty(path string) *Log {
	notify := make(chan struct{})
	close(notify)
	return &Log{path: path, durable: func(string) bool { return false }, offsets: []int64{0},
		maxLine: MaxLine, subs: map[*Subscription]struct{}{}, notify: notify, closed: true}
}

// headLen is how much of a line scan keeps: enough for {"seq":N, with any
// int64 N.
const headLen = 32

// scan indexes the complete lines of f and checks that their seqs run 1, 2,
// 3...; it returns the offsets of the lines and the end of the last one. A
// damaged line is a *DamageError returned with the offsets and end of the
// lines before it. Only each line's first bytes are kept, so a line of any
// length is read in bounded memory.
func scan(f io.Reader, path string, bufSize, maxLine int) ([]int64, int64, error) {
	br := bufio.NewReaderSize(f, bufSize)
	var offsets []int64
	var off int64
	head := make([]byte, 0, headLen)
	for {
		n, h, last, err := nextLine(br, head[:0], maxLine)
		line := len(offsets) + 1
		var tooLong *lineTooLong
		switch {
		case errors.As(err, &tooLong):
			return offsets, off, &DamageError{Path: path, Line: line, Err: err}
		case err == io.EOF:
			return offsets, off, nil // a line without its newline is torn
		case err != nil:
			return nil, 0, fmt.Errorf("read %s: %w", path, err)
		}
		seq, perr := seqOf(h)
		if perr != nil || seq != int64(line) || last != '}' {
			return offsets, off, &DamageError{Path: path, Line: line, Err: fmt.Errorf("not event %d of the log", line)}
		}
		offsets = append(offsets, off)
		off += n
	}
}

// lineTooLong is a line over the log's limit.
type lineTooLong struct{ max int }

func (e *lineTooLong) Error() string {
	return fmt.Sprintf("line longer than the event log's %d byte limit", e.max)
}

// nextLine reads past one line: its length with the newline, its first
// headLen bytes (appended to head) and its last byte before the newline.
// io.EOF is the end of the input, with or without a torn line before it.
func nextLine(br *bufio.Reader, head []byte, maxLine int) (n int64, h []byte, last byte, err error) {
	h = head
	for {
		chunk, err := br.ReadSlice('\n')
		if len(h) < headLen {
			h = append(h, chunk[:min(len(chunk), headLen-len(h))]...)
		}
		n += int64(len(chunk))
		body := chunk
		if err == nil {
			body = chunk[:len(chunk)-1]
		}
		if len(body) > 0 {
			last = body[len(body)-1]
		}
		switch {
		case err == nil && n-1 > int64(maxLine), errors.Is(err, bufio.ErrBufferFull) && n > int64(maxLine):
			return n, h, last, &lineTooLong{max: maxLine}
		case err == nil:
			return n, h, last, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return n, h, last, err
		}
	}
}

// seqOf reads the seq of an encoded event, which always starts {"seq":N,
// with N as JSON writes it: digits, no sign, no leading zero.
func seqOf(line []byte) (int64, error) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, errors.New("no seq")
	}
	rest := line[len(prefix):]
	i := bytes.IndexAny(rest, ",}")
	if i < 1 || rest[0] == '0' || bytes.IndexFunc(rest[:i], func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, errors.New("no seq")
	}
	return strconv.ParseInt(string(rest[:i]), 10, 64)
}

// Path is the file of the log.
func (l *Log) Path() string { return l.path }

// LastSeq is the seq of the newest event (0 for none).
func (l *Log) LastSeq() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int64(len(l.offsets) - 1)
}

// Append writes one event and hands it to every follower. obj is a JSON
// object holding the event's fields but not seq (the log adds it first):
// {"type":T,"time":...,...}. It returns the event's seq.
func (l *Log) Append(typ string, obj []byte) (int64, error) {
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return 0, fmt.Errorf("append %s event: not a JSON object", typ)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	seq := int64(len(l.offsets))
	b := append(l.buf[:0], `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	if len(obj) > 2 {
		b = append(b, ',')
	}
	b = append(b, obj[1:]...)
	if len(b) > l.maxLine {
		if cap(b) > 64<<10 {
			b = nil // a refused giant is not kept
		}
		l.buf = b
		return 0, fmt.Errorf("append %s event to %s: %d bytes is longer than the event log's %d byte limit", typ, l.path, len(b), l.maxLine)
	}
	b = append(b, '\n')
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		// A partial write is a torn line: cut it so the log stays whole.
		_ = l.w.Truncate(l.offsets[len(l.offsets)-1])
		_, _ = l.w.Seek(l.offsets[len(l.offsets)-1], io.SeekStart)
		return 0, fmt.Errorf("append to %s: %w", l.path, err)
	}
	if l.durable(typ) {
		if err := l.syncDurable(); err != nil {
			return 0, fmt.Errorf("sync %s: %w", l.path, err)
		}
	}
	l.offsets = append(l.offsets, l.offsets[len(l.offsets)-1]+int64(len(b)))
	if len(l.subs) > 0 { // a copy for the followers, none when none follow (a run's own log)
		ev := Event{Seq: seq, Type: typ, Raw: append(json.RawMessage(nil), b[:len(b)-1]...)}
		for s := range l.subs {
			s.offer(ev)
		}
	}
	if l.waiting > 0 { // only a Wait blocked now holds notify (it counts itself under mu)
		close(l.notify)
		l.notify = make(chan struct{})
	}
	return seq, nil
}

// syncDurable syncs the log now, or within lag when set (a failure of the
// last grouped sync is reported here). The caller holds mu.
func (l *Log) syncDurable() error {
	if l.lag <= 0 {
		return l.w.Sync()
	}
	if err := l.syncErr; err != nil {
		l.syncErr = nil
		return err
	}
	if l.lagging == nil {
		l.lagging = time.AfterFunc(l.lag, l.lateSync)
	}
	return nil
}

// Read returns up to max events with seq > after (max <= 0: all of them).
func (l *Log) Read(after int64, max int) ([]Event, error) { return l.ReadPage(after, max, 0) }

// ReadPage returns up to limit events with seq > after (limit <= 0: no limit
// on the count) whose lines take at most maxBytes (<= 0: no limit), and at
// least one event when there is one after: an event larger than maxBytes
// is a page of its own. Only the page is read into memory.
func (l *Log) ReadPage(after int64, limit int, maxBytes int64) ([]Event, error) {
	l.mu.Lock()
	last := int64(len(l.offsets) - 1)
	if after < 0 {
		after = 0
	}
	if after >= last {
		l.mu.Unlock()
		return nil, nil
	}
	to := last
	if limit > 0 && after+int64(limit) < last {
		to = after + int64(limit)
	}
	if maxBytes > 0 {
		// k events fit while the end of the k-th is within maxBytes.
		lim := l.offsets[after] + maxBytes
		k := sort.Search(int(to-after), func(i int) bool { return l.offsets[after+1+int64(i)] > lim })
		to = after + int64(max(k, 1))
	}
	offs := l.offsets[after : to+1 : to+1]
	l.mu.Unlock()
	// offsets only grow by appending, so offs stays valid without the lock.
	// A handle per read: a closed log (an ended session) stays readable.
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("read event log: %w", err)
	}
	defer f.Close()
	buf := make([]byte, offs[len(offs)-1]-offs[0])
	if _, err := f.ReadAt(buf, offs[0]); err != nil {
		return nil, fmt.Errorf("read %s: %w", l.path, err)
	}
	evs := make([]Event, 0, len(offs)-1)
	for i := 0; i+1 < len(offs); i++ {
		raw := buf[offs[i]-offs[0] : offs[i+1]-offs[0]-1]
		evs = append(evs, Event{Seq: after + int64(i) + 1, Type: typeOf(raw), Raw: raw})
	}
	return evs, nil
}

// typeOf finds the "type" of an encoded event without decoding all of it.
func typeOf(raw []byte) string {
	var t struct {
		Type string `json:"type"`
	}
	i := bytes.Index(raw, []byte(`"type":"`))
	if i < 0 {
		_ = json.Unmarshal(raw, &t)
		return t.Type
	}
	rest := raw[i+len(`"type":"`):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return string(rest[:j])
	}
	return ""
}

// Wait returns a page of events after seq (ReadPage with maxBytes), waiting
// until there is one, ctx ends or the log is closed. An ended wait is not an
// error: it returns no events.
func (l *Log) Wait(ctx context.Context, after int64, maxBytes int64) ([]Event, error) {
	for {
		l.mu.Lock()
		last, ch, closed := int64(len(l.offsets)-1), l.notify, l.closed
		if last > after || closed {
			l.mu.Unlock()
			return l.ReadPage(after, 0, maxBytes)
		}
		l.waiting++
		l.mu.Unlock()
		var done bool
		select {
		case <-ch:
		case <-ctx.Done():
			done = true
		}
		l.mu.Lock()
		l.waiting--
		l.mu.Unlock()
		if done {
			return nil, nil
		}
	}
}

// Followers is how many subscriptions follow the log's live events.
func (l *Log) Followers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

// Waiting is how many Wait calls are blocked until the next event (long
// polls in progress).
func (l *Log) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waiting
}

// Sync flushes the log to disk.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	return l.w.Sync()
}

// Close syncs and closes the log; followers see the end of their stream.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	for s := range l.subs {
		s.end(false)
		delete(l.subs, s)
	}
	close(l.notify)
	if l.lagging != nil {
		l.lagging.Stop() // this sync does its work
		l.lagging = nil
	}
	serr := l.w.Sync()
	werr := l.w.Close()
	if err := errors.Join(l.syncErr, serr, werr); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
