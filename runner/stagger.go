package runner

import (
	"context"
	"time"
)

// reserveStart takes a start slot from the gate (the caller releases it
// when the CLI has exited), then spaces the starts of a wave. It
// returns errHeld when a usage limit stopped the run, or ctx's error.
func (r *run) reserveStart(ctx context.Context) error {
	if err := r.gate.acquire(ctx, false); err != nil {
		return err
	}
	if r.shared != nil {
		if err := r.shared.acquire(ctx, false); err != nil {
			r.gate.release()
			return err
		}
	}
	if !r.stagger(ctx) {
		r.releaseStart()
		return ctx.Err()
	}
	return nil
}

// releaseStart frees what reserveStart took.
func (r *run) releaseStart() {
	if r.shared != nil {
		r.shared.release()
	}
	r.gate.release()
}

// overloaded counts one 429/529 answer on the run's gate and the shared one.
func (r *run) overloaded() {
	r.gate.overloaded()
	if r.shared != nil {
		r.shared.overloaded()
	}
}

// stagger spaces the starts of a wave by the plan's stagger and returns
// when this job may start, or false when ctx ended first.
func (r *run) stagger(ctx context.Context) bool {
	r.mu.Lock()
	wait, next, left := spaceStart(time.Now(), r.nextStart, r.waveLeft, r.plan.Stagger)
	r.nextStart, r.waveLeft = next, left
	r.mu.Unlock()
	return sleep(ctx, wait)
}

// sleep waits d and reports true, or false as soon as ctx ends.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newWave spaces the next starts again, as at the run's start: the jobs
// held for a usage limit all start when it resets.
func (r *run) newWave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waveLeft = r.plan.Concurrency
}

// spaceStart decides when a CLI start may go. A wave (the first start of
// each of the run's slots, or the starts after a usage-limit hold) would
// start every CLI at the same instant: its starts are spaced by stagger,
// the first at once. Later starts follow jobs that end at their own pace
// and go at once; spacing them would throttle the steady state (at 100 ms,
// ten starts a second) for a race that docs/limits.md measured as harmless.
// next is the earliest time the next spaced start may go; waveLeft counts
// the starts of the wave still to come.
func spaceStart(now, next time.Time, waveLeft int, stagger time.Duration) (wait time.Duration, newNext time.Time, newLeft int) {
	if stagger <= 0 || waveLeft <= 0 {
		return 0, next, waveLeft
	}
	at := next
	if at.Before(now) {
		at = now
	}
	return at.Sub(now), at.Add(stagger), waveLeft - 1
}
