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
	"strconv"
	"sync"
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
	notify  chan struct{} // closed and replaced at every append (long-poll)
	closed  bool
	buf     []byte
}

// Open opens (creating if needed) the log at path, reloading what is there.
// A torn last line (a crash mid-write) is dropped and the log continues at
// the seq after the last complete line. durable reports which event types
// are synced to disk when appended (nil: none; Close always syncs).
func Open(path string, durable func(typ string) bool) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create event log dir: %w", err)
	}
	w, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	offsets, end, err := scan(w, path)
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
	return &Log{path: path, durable: durable, w: w, offsets: append(offsets, end),
		subs: map[*Subscription]struct{}{}, notify: make(chan struct{})}, nil
}

// scan indexes the complete lines of f and checks that their seqs run 1, 2,
// 3...; it returns the offsets of the lines and the end of the last one.
func scan(f *os.File, path string) ([]int64, int64, error) {
	br := bufio.NewReaderSize(f, 256<<10)
	var offsets []int64
	var off int64
	for {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = br.ReadSlice('\n')
			line = append(append([]byte(nil), line...), more...)
		}
		if err == io.EOF {
			return offsets, off, nil // a line without its newline is torn
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read %s: %w", path, err)
		}
		seq, perr := seqOf(line)
		if perr != nil || seq != int64(len(offsets)+1) {
			return nil, 0, fmt.Errorf("%s:%d: not event %d of the log", path, len(offsets)+1, len(offsets)+1)
		}
		offsets = append(offsets, off)
		off += int64(len(line))
	}
}

// seqOf reads the seq of an encoded event, which always starts {"seq":N,
func seqOf(line []byte) (int64, error) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, errors.New("no seq")
	}
	rest := line[len(prefix):]
	i := bytes.IndexAny(rest, ",}")
	if i < 0 {
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
	b = append(b, '\n')
	l.buf = b
	if _, err := l.w.Write(b); err != nil {
		// A partial write is a torn line: cut it so the log stays whole.
		_ = l.w.Truncate(l.offsets[len(l.offsets)-1])
		_, _ = l.w.Seek(l.offsets[len(l.offsets)-1], io.SeekStart)
		return 0, fmt.Errorf("append to %s: %w", l.path, err)
	}
	if l.durable(typ) {
		if err := l.w.Sync(); err != nil {
			return 0, fmt.Errorf("sync %s: %w", l.path, err)
		}
	}
	l.offsets = append(l.offsets, l.offsets[len(l.offsets)-1]+int64(len(b)))
	ev := Event{Seq: seq, Type: typ, Raw: append(json.RawMessage(nil), b[:len(b)-1]...)}
	for s := range l.subs {
		s.offer(ev)
	}
	close(l.notify)
	l.notify = make(chan struct{})
	return seq, nil
}

// Read returns up to max events with seq > after (max <= 0: all of them).
func (l *Log) Read(after int64, max int) ([]Event, error) {
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
	if max > 0 && after+int64(max) < last {
		to = after + int64(max)
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

// Wait returns the events after seq, waiting until there is one, ctx ends
// or the log is closed. An ended wait is not an error: it returns no events.
func (l *Log) Wait(ctx context.Context, after int64) ([]Event, error) {
	for {
		l.mu.Lock()
		last, ch, closed := int64(len(l.offsets)-1), l.notify, l.closed
		l.mu.Unlock()
		if last > after || closed {
			return l.Read(after, 0)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil
		}
	}
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
	serr := l.w.Sync()
	werr := l.w.Close()
	if err := errors.Join(serr, werr); err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
