//go:build linux

package claude

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
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
			escaped := startMarked(t, marker, true)
			if n := killMarked(marker, cli.Process.Pid, born); n != 1 {
				t.Fatalf("killMarked signalled %d processes, want 1", n)
			}
			select {
			case <-escaped.done:
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
	older := startMarked(t, marker, false)
	cli := exec.Command("true")
	if err := cli.Run(); err != nil {
		t.Fatal(err)
	}
	if cli.Process.Pid < older.pid {
		t.Skip("the pid counter wrapped between the two starts")
	}
	if n := killMarked(marker, cli.Process.Pid, time.Now()); n != 0 {
		t.Fatalf("the window reached a process older than the CLI (%d signalled)", n)
	}
	if n := killMarked(marker, cli.Process.Pid, time.Now().Add(-24*time.Hour)); n != 1 {
		t.Fatalf("a full scan signalled %d, want 1", n)
	}
}

// marked is a process started by startMarked.
type marked struct {
	pid  int
	done chan struct{} // closed when it has exited
}

// startMarked starts `sleep 300` with only marker in its environment (in a
// session of its own with setsid) and waits until /proc shows that
// environment: Start returns once the exec has begun, and the kernel sets up
// the new program's environment a moment later (until then /proc shows it
// empty, and killMarked passes the process by).
func startMarked(t *testing.T, marker string, setsid bool) marked {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{marker}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := marked{pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(m.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-m.done })
	environ := "/proc/" + strconv.Itoa(m.pid) + "/environ"
	poll.Eventually(t, 10*time.Second, func() bool {
		env, err := os.ReadFile(environ)
		return err == nil && strings.Contains(string(env), marker)
	}, "the environment of pid %d never showed the marker", m.pid)
	return m
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

// TestReadProc: a file longer than the buffer is read whole after its skip
// bytes, a missing one is nil, and readProcInt fails on it.
func TestReadProc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "environ")
	want := bytes.Repeat([]byte("K=v\x00"), 10000) // 40 KB
	if err := os.WriteFile(path, want, 0o644); err != nil {
		t.Fatal(err)
	}
	data, buf := readProc(path, 1, make([]byte, 0, 100))
	if len(data) != len(want)+1 || data[0] != 0 || !bytes.Equal(data[1:], want) {
		t.Fatalf("read %d bytes, want a zero and %d", len(data), len(want))
	}
	if cap(buf) < len(data) {
		t.Fatalf("the grown buffer is not returned (cap %d)", cap(buf))
	}
	if data, _ := readProc(path+".missing", 1, buf); data != nil {
		t.Fatalf("a missing file read as %q", data)
	}
	if _, err := readProcInt(path + ".missing"); err == nil {
		t.Fatal("readProcInt of a missing file did not fail")
	}
	if n, err := readProcInt("/proc/sys/kernel/pid_max"); err != nil || n <= 0 {
		t.Fatalf("pid_max = %d, %v", n, err)
	}
}
