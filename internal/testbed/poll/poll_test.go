package poll

import (
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	tests := []struct {
		name      string
		trueAfter int32 // calls before cond holds; -1 never
		want      bool
	}{
		{"at once", 0, true},
		{"after a few polls", 3, true},
		{"never", -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			start := time.Now()
			got := Until(100*time.Millisecond, func() bool {
				n := calls.Add(1) - 1
				return tt.trueAfter >= 0 && n >= tt.trueAfter
			})
			if got != tt.want {
				t.Errorf("Until() = %t after %d calls, want %t", got, calls.Load(), tt.want)
			}
			if !tt.want && time.Since(start) < 100*time.Millisecond {
				t.Errorf("Until gave up after %v, before its timeout", time.Since(start))
			}
			if tt.want && int(calls.Load()) != int(tt.trueAfter)+1 {
				t.Errorf("cond called %d times, want %d", calls.Load(), tt.trueAfter+1)
			}
		})
	}
}

// recorder is a testing.TB that records Fatalf instead of stopping.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyFailsWithTheMessage(t *testing.T) {
	r := &recorder{TB: t}
	Eventually(r, 30*time.Millisecond, func() bool { return false }, "file %s to appear", "x.json")
	if want := "not within 30ms: file x.json to appear"; r.msg != want {
		t.Errorf("failure = %q, want %q", r.msg, want)
	}
	r.msg = ""
	Eventually(r, 30*time.Millisecond, func() bool { return true }, "never shown")
	if r.msg != "" {
		t.Errorf("a condition that holds failed the test: %q", r.msg)
	}
}

func TestGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	if Gone(t, pid, 50*time.Millisecond) {
		t.Fatalf("Gone(%d) = true for a running sleep", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet: a zombie counts as gone.
	if !Gone(t, pid, 5*time.Second) {
		t.Errorf("Gone(%d) = false for a killed process (zombie)", pid)
	}
	_ = cmd.Wait() // killed: the error is the signal
	if !Gone(t, pid, 0) {
		t.Errorf("Gone(%d) = false for a reaped process", pid)
	}
}
