package runner

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// Storm control: overloaded (529) and rate-limited (429) answers in a burst
// halve the number of CLIs that may run at once; calm brings it back one
// step at a time. Each change is an event.
const (
	// stormHits answers within the storm window make a storm.
	stormHits = 3
	// DefaultStormWindow is Options.StormWindow's default.
	DefaultStormWindow = 30 * time.Second
	// DefaultRecoverAfter is Options.RecoverAfter's default.
	DefaultRecoverAfter = 30 * time.Second
)

// concurrency is the adaptive limit on CLIs running at once.
type concurrency struct {
	limit, max int
	hits       []time.Time // overload answers since the last change
	changed    time.Time   // the last change (or the start)
}

// overloaded takes one 429/529 answer at now: a storm (stormHits within
// window) halves the limit, never below one. changed says the limit moved.
func (c concurrency) overloaded(now time.Time, window time.Duration) (concurrency, bool) {
	kept := c.hits[:0:0]
	for _, t := range c.hits {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	c.hits = append(kept, now)
	if len(c.hits) < stormHits {
		return c, false
	}
	c.hits, c.changed = nil, now
	if c.limit <= 1 {
		return c, false
	}
	c.limit = max(c.limit/2, 1)
	return c, true
}

// recovered raises a lowered limit by one once recoverAfter passed since the
// last change (or the last overload answer) with no storm.
func (c concurrency) recovered(now time.Time, recoverAfter time.Duration) (concurrency, bool) {
	last := c.changed
	if n := len(c.hits); n > 0 && c.hits[n-1].After(last) {
		last = c.hits[n-1]
	}
	if c.limit >= c.max || now.Sub(last) < recoverAfter {
		return c, false
	}
	c.limit++
	c.changed = now
	return c, true
}

// nextRecovery is when recovered may next raise the limit (zero: never).
func (c concurrency) nextRecovery(recoverAfter time.Duration) time.Time {
	if c.limit >= c.max {
		return time.Time{}
	}
	last := c.changed
	if n := len(c.hits); n > 0 && c.hits[n-1].After(last) {
		last = c.hits[n-1]
	}
	return last.Add(recoverAfter)
}

// errHeld is returned by gate.acquire when the run gave up waiting.
var errHeld = errors.New("usage limit")

// gate admits CLI starts: at most the adaptive limit at once, none while a
// usage limit holds the run, and, once quota is reserved, no new jobs.
type gate struct {
	window, recoverAfter time.Duration
	onChange             func(limit int, reason string)

	mu       sync.Mutex
	conc     concurrency
	active   int
	until    time.Time // held until then for a usage limit
	reserved bool      // past reserve_utilization: no new job starts
	closed   bool      // a usage limit beyond max_wait: nothing starts
	wake     chan struct{}
}

func newGate(limit int, window, recoverAfter time.Duration, onChange func(int, string)) *gate {
	return &gate{window: window, recoverAfter: recoverAfter, onChange: onChange,
		conc: concurrency{limit: limit, max: limit, changed: time.Now()}, wake: make(chan struct{})}
}

// broadcast wakes every waiter; g.mu is held.
func (g *gate) broadcast() {
	close(g.wake)
	g.wake = make(chan struct{})
}

// acquire waits for a start slot. It returns errHeld when the run stopped
// waiting for a usage limit (or, for a new job, when quota is reserved),
// and ctx's error when ctx ends first.
func (g *gate) acquire(ctx context.Context, newJob bool) error {
	for {
		g.mu.Lock()
		now := time.Now()
		g.recover(now)
		switch {
		case g.closed || (newJob && g.reserved):
			g.mu.Unlock()
			return errHeld
		case now.After(g.until) && g.active < g.conc.limit:
			g.active++
			g.mu.Unlock()
			return nil
		}
		wake, at := g.wake, g.until
		if r := g.conc.nextRecovery(g.recoverAfter); !r.IsZero() && (at.Before(now) || r.Before(at)) {
			at = r
		}
		g.mu.Unlock()
		if err := sleepUntil(ctx, at, wake); err != nil {
			return err
		}
	}
}

// recover raises a lowered limit when calm; g.mu is held.
func (g *gate) recover(now time.Time) {
	if c, changed := g.conc.recovered(now, g.recoverAfter); changed {
		g.conc = c
		g.onChange(c.limit, "recovered")
		g.broadcast()
	}
}

// release frees a start slot.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.active--
	g.broadcast()
}

// overloaded counts one 429/529 answer.
func (g *gate) overloaded() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, changed := g.conc.overloaded(time.Now(), g.window); changed {
		g.conc = c
		g.onChange(c.limit, "overloaded")
	} else {
		g.conc = c
	}
}

// hold stops starts until reset. It reports whether the hold is new (the
// run was not already held until then or later).
func (g *gate) hold(reset time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !reset.After(g.until) {
		return false
	}
	g.until = reset
	return true
}

// close stops every start for good: the usage limit outlasts max_wait.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.broadcast()
}

// reserve stops new jobs from starting: utilization is past the reserve.
func (g *gate) reserve() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserved = true
	g.broadcast()
}

// sleepUntil waits until at (forever when at is not in the future and wake
// never comes), wake closes, or ctx ends.
func sleepUntil(ctx context.Context, at time.Time, wake <-chan struct{}) error {
	var tc <-chan time.Time
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-tc:
		return nil
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) isReserved() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reserved
}

// SharedGate is the gate a server's sessions and runs share. It bounds the
// CLIs running at once across all of them (at most limit; a session's CLI
// holds its slot for its life, a job's for its attempt), and a 429/529
// storm that any of their CLIs meets halves that bound for all, as a
// storm met by one job slows every job of a run; calm brings it back a
// step at a time. A usage limit one session meets holds the CLI starts of
// every session until its reset. A run that shares it keeps its own gate
// too (its concurrency and its usage-limit holds) and takes a slot of
// both for each CLI it starts.
type SharedGate struct{ g *gate }

// NewSharedGate returns the gate of one server: at most limit CLIs at once
// (limit <= 0: no bound but a storm's). onChange, when set, hears each
// change of the bound (the reason is overloaded or recovered).
func NewSharedGate(limit int, onChange func(limit int, reason string)) *SharedGate {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	if onChange == nil {
		onChange = func(int, string) {}
	}
	return &SharedGate{g: newGate(limit, DefaultStormWindow, DefaultRecoverAfter, onChange)}
}

// Limit is how many CLIs may run at once now.
func (s *SharedGate) Limit() int {
	s.g.mu.Lock()
	defer s.g.mu.Unlock()
	return s.g.conc.limit
}
