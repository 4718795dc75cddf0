// Package poll polls for a condition in tests, in place of hand-written
// deadline loops and of fixed sleeps that hope a condition holds by then.
package poll

import (
	"fmt"
	"testing"
	"time"
)

// Tick is how often a condition is polled: short next to any timeout a test
// uses, long enough not to busy a shared machine.
const Tick = 10 * time.Millisecond

// Until polls cond every Tick and reports whether it held within timeout.
// cond is always called at least once, and once more at the deadline.
func Until(timeout time.Duration, cond func() bool) bool {
	return UntilEvery(timeout, Tick, cond)
}

// UntilEvery is Until polling every interval instead of every Tick: for a
// condition that is dear to ask (one that starts a process, as a tmux
// capture does), asked less often.
func UntilEvery(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// Eventually polls cond until it holds and fails the test now (t.Fatal)
// if it does not within timeout. The message, format and args as for
// fmt.Sprintf, says what was awaited; the failure reads
// "not within 10s: <message>".
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Until(timeout, cond) {
		t.Fatalf("not within %v: %s", timeout, fmt.Sprintf(format, args...))
	}
}
