package eventlog

import (
	"context"
	"errors"
)

// ErrSlow ends a subscription whose reader fell more than its buffer behind.
var ErrSlow = errors.New("reader fell too far behind")

// ErrEnded ends a subscription whose log was closed.
var ErrEnded = errors.New("event log closed")

// Subscription replays a log after a seq and then follows it. Next returns
// every event exactly once, in seq order, without gaps. Live events wait in
// a bounded buffer; a reader that lets it fill is dropped (ErrSlow) so that
// the log's writer never waits for it.
type Subscription struct {
	log *Log
	// next is the seq Next returns next; replay reads the file up to upTo.
	next, upTo int64
	live       chan Event
	// dropped is set before live is closed when the buffer overflowed.
	dropped bool
}

// A replay reads the file a page at a time: at most replayBatch events and
// replayBytes bytes (or one larger event), so that replaying a log of any
// size holds one page in memory.
const (
	replayBatch = 512
	replayBytes = 1 << 20
)

// Subscribe follows the log from the event after seq after. buffer bounds
// how many live events may wait for the reader.
func (l *Log) Subscribe(after int64, buffer int) *Subscription {
	if buffer < 1 {
		buffer = 1
	}
	s := &Subscription{log: l, live: make(chan Event, buffer)}
	l.mu.Lock()
	defer l.mu.Unlock()
	last := int64(len(l.offsets) - 1)
	if after < 0 {
		after = 0
	}
	s.next, s.upTo = min(after, last)+1, last
	if l.closed {
		close(s.live)
		return s
	}
	l.subs[s] = struct{}{}
	return s
}

// offer hands a live event to the subscription; called under the log's lock.
func (s *Subscription) offer(ev Event) {
	select {
	case s.live <- ev:
	default:
		s.end(true)
		delete(s.log.subs, s)
	}
}

// end closes the live buffer; called under the log's lock.
func (s *Subscription) end(slow bool) {
	s.dropped = slow
	close(s.live)
}

// Next returns the next events in order: a batch of replayed ones, or the
// live events waiting (at least one, blocking until one comes). It fails
// with ErrSlow after an overflow, ErrEnded when the log closed and every
// event was returned, or ctx's error.
func (s *Subscription) Next(ctx context.Context) ([]Event, error) {
	for {
		evs, err := s.next1(ctx)
		if err != nil || len(evs) > 0 {
			return evs, err
		}
	}
}

// Last is the seq of the last event Next returned (or the seq subscribed after).
func (s *Subscription) Last() int64 { return s.next - 1 }

func (s *Subscription) next1(ctx context.Context) ([]Event, error) {
	if s.next <= s.upTo {
		evs, err := s.log.ReadPage(s.next-1, int(min(s.upTo-s.next+1, replayBatch)), replayBytes)
		if err != nil {
			return nil, err
		}
		s.next += int64(len(evs))
		return evs, nil
	}
	var evs []Event
	select {
	case ev, ok := <-s.live:
		if !ok {
			return nil, s.endErr()
		}
		evs = append(evs, ev)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for len(evs) < cap(s.live) {
		select {
		case ev, ok := <-s.live:
			if !ok {
				return s.keep(evs), nil
			}
			evs = append(evs, ev)
		default:
			return s.keep(evs), nil
		}
	}
	return s.keep(evs), nil
}

// Ready returns the live events waiting, without blocking: none when there
// are none, while a replay is still due (Next returns it), or when the
// subscription ended (Next then says how).
func (s *Subscription) Ready() []Event {
	if s.next <= s.upTo {
		return nil
	}
	var evs []Event
	for len(evs) < cap(s.live) {
		select {
		case ev, ok := <-s.live:
			if !ok {
				return s.keep(evs) // closed: the next Next says why
			}
			evs = append(evs, ev)
		default:
			return s.keep(evs)
		}
	}
	return s.keep(evs)
}

// keep advances next past evs; live events all follow the replayed range
// (Subscribe registers under the log's lock), so the filter is a guard.
func (s *Subscription) keep(evs []Event) []Event {
	out := evs[:0]
	for _, ev := range evs {
		if ev.Seq >= s.next {
			out = append(out, ev)
			s.next = ev.Seq + 1
		}
	}
	return out
}

func (s *Subscription) endErr() error {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if s.dropped {
		return ErrSlow
	}
	return ErrEnded
}

// Close stops following; it is safe to call more than once.
func (s *Subscription) Close() {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if _, ok := s.log.subs[s]; ok {
		delete(s.log.subs, s)
		close(s.live)
	}
}
