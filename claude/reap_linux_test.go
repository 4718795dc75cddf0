//go:build linux

package claude

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestKillMarkedFindsEscapedProcesses starts a process in a session of its
// own (as the Bash tool does for background commands) carrying a marker:
// killMarked finds it through the pid window of a recent start, and through
// a full scan for a start long ago.
func TestKillMarkedFindsEscapedProcesses(t *testing.T) {
	for _, tc := range []struct {
		name string
		age  time.Duration
	}{{"window", 0}, {"full scan", 24 * time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			marker := MarkerEnv + "=test-" + newRequestID()
			// The "CLI": a process started now, whose pid opens the window.
			cli := exec.Command("true")
			born := time.Now().Add(-tc.age)
			if err := cli.Run(); err != nil {
				t.Fatal(err)
			}
			escaped := exec.Command("sleep", "300")
			escaped.Env = []string{marker}
			escaped.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := escaped.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { _ = escaped.Wait(); close(done) }()
			t.Cleanup(func() { _ = escaped.Process.Kill(); <-done })
			if n := killMarked(marker, cli.Process.Pid, born); n != 1 {
				t.Fatalf("killMarked signalled %d processes, want 1", n)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the marked process outlived killMarked")
			}
			if n := killMarked(marker, cli.Process.Pid, born); n != 0 {
				t.Errorf("a second killMarked signalled %d", n)
			}
		})
	}
}

// TestKillMarkedReadsOnlyTheWindow: a marked process older than the CLI
// cannot be its descendant, and the window leaves it unread; a full scan
// (a start too long ago to trust the window) finds it.
func TestKillMarkedReadsOnlyTheWindow(t *testing.T) {
	marker := MarkerEnv + "=test-" + newRequestID()
	older := exec.Command("sleep", "300")
	older.Env = []string{marker}
	if err := older.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = older.Wait(); close(done) }()
	t.Cleanup(func() { _ = older.Process.Kill(); <-done })
	cli := exec.Command("true")
	if err := cli.Run(); err != nil {
		t.Fatal(err)
	}
	if cli.Process.Pid < older.Process.Pid {
		t.Skip("the pid counter wrapped between the two starts")
	}
	if n := killMarked(marker, cli.Process.Pid, time.Now()); n != 0 {
		t.Fatalf("the window reached a process older than the CLI (%d signalled)", n)
	}
	if n := killMarked(marker, cli.Process.Pid, time.Now().Add(-24*time.Hour)); n != 1 {
		t.Fatalf("a full scan signalled %d, want 1", n)
	}
}

func TestPidWindow(t *testing.T) {
	for _, tc := range []struct {
		w    pidWindow
		pid  int
		want bool
	}{
		{pidWindow{all: true}, 7, true},
		{pidWindow{from: 100, to: 200}, 150, true},
		{pidWindow{from: 100, to: 200}, 200, true},
		{pidWindow{from: 100, to: 200}, 100, false}, // the CLI itself
		{pidWindow{from: 100, to: 200}, 99, false},
		{pidWindow{from: 100, to: 200}, 201, false},
		{pidWindow{from: 100, to: 100}, 100, false}, // nothing allocated since
		{pidWindow{from: 32000, to: 50}, 32500, true},
		{pidWindow{from: 32000, to: 50}, 40, true},
		{pidWindow{from: 32000, to: 50}, 1000, false},
		{pidWindow{from: 32000, to: 50}, 32000, false},
	} {
		if got := tc.w.contains(tc.pid); got != tc.want {
			t.Errorf("%+v contains %d = %v, want %v", tc.w, tc.pid, got, tc.want)
		}
	}
	for _, tc := range []struct {
		w    pidWindow
		want []int
	}{
		{pidWindow{from: 100, to: 103, max: 32768}, []int{101, 102, 103}},
		{pidWindow{from: 100, to: 100, max: 32768}, []int{}},
		{pidWindow{from: 32765, to: 2, max: 32768}, []int{32766, 32767, 32768, 1, 2}}, // 32768 is never a pid: a failed open
	} {
		if got := tc.w.pids(); !slices.Equal(got, tc.want) {
			t.Errorf("%+v pids %v, want %v", tc.w, got, tc.want)
		}
	}
	if w := newPidWindow(1, time.Now().Add(-time.Hour*24*365)); !w.all {
		t.Errorf("a start a year ago gives %+v, want a full scan", w)
	}
	if w := newPidWindow(0, time.Now()); !w.all {
		t.Errorf("an unknown pid gives %+v, want a full scan", w)
	}
}
