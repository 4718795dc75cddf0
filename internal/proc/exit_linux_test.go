package proc

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestAwaitExitWaitsForTheExit: AwaitExit returns only once the child has
// exited, leaves it for Wait to reap (its exit code intact), and keeps no
// descriptor open.
func TestAwaitExitWaitsForTheExit(t *testing.T) {
	before := openFDs(t)
	cmd := exec.Command("/bin/sh", "-c", "read line; exit 7")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { AwaitExit(cmd.Process); close(done) }()
	select {
	case <-done:
		t.Fatal("AwaitExit returned while the child still waited for its input")
	case <-time.After(50 * time.Millisecond):
		// The child is blocked on stdin: still running. (Not a sleep that
		// a pass depends on: a failure here means AwaitExit returned early.)
	}
	_ = in.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitExit did not return after the child exited")
	}
	err = cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("Wait after AwaitExit: %v, state %v; want exit code 7", err, cmd.ProcessState)
	}
	if after := openFDs(t); after > before {
		t.Errorf("open descriptors: %d before, %d after", before, after)
	}
}

// TestAwaitExitExitedAlready: a child that exited before the call (a
// zombie not yet reaped) returns at once.
func TestAwaitExitExitedAlready(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		AwaitExit(cmd.Process)
		AwaitExit(cmd.Process) // twice: still exited
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitExit did not return for an exited child")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
