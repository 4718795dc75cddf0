package proc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// helperVar makes the test binary a helper: it starts a grandchild (sleep),
// prints its pid, and waits to be killed.
const helperVar = "PNEUMA_PROC_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperVar) == "spawn" {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(c.Process.Pid)
		time.Sleep(time.Minute) // the behaviour under test: a parent that lives until its group is killed
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dead reports whether pid is gone or a zombie.
func dead(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i > 0 && len(data) > i+2 && (data[i+2] == 'Z' || data[i+2] == 'X')
}

func TestSignalReachesTheWholeGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperVar+"=spawn")
	NewGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read the grandchild's pid: %v", err)
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(line))
	for _, pid := range []int{cmd.Process.Pid, gc} {
		if pgid, err := syscall.Getpgid(pid); err != nil || pgid != cmd.Process.Pid {
			t.Errorf("process %d: group %d (%v), want the child's own group %d", pid, pgid, err, cmd.Process.Pid)
		}
	}
	if err := Signal(cmd.Process, syscall.SIGKILL); err != nil {
		t.Fatalf("Signal() = %v", err)
	}
	_ = cmd.Wait() // killed: the error is the signal, checked below
	if got := ExitSignal(cmd.ProcessState); got != "SIGKILL" {
		t.Errorf("ExitSignal() = %q, want SIGKILL", got)
	}
	poll.Eventually(t, 5*time.Second, func() bool { return dead(gc) }, "grandchild %d to die with its group", gc)
	if err := Signal(cmd.Process, syscall.SIGKILL); err != nil {
		t.Errorf("Signal() to a group that is gone = %v, want nil", err)
	}
}

func TestCancelBySignalsTheGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sleep", "60")
	NewGroup(cmd)
	CancelBy(cmd, syscall.SIGTERM)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Error("Wait() = nil after cancellation, want an error")
	}
	if got := ExitSignal(cmd.ProcessState); got != "SIGTERM" {
		t.Errorf("ExitSignal() = %q, want SIGTERM", got)
	}
}

func TestExitSignalOfANormalExit(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := ExitSignal(cmd.ProcessState); got != "" {
		t.Errorf("ExitSignal() = %q, want \"\"", got)
	}
}

func TestNewGroupTiedDiesWithParent(t *testing.T) {
	var cmd exec.Cmd
	NewGroupTied(&cmd)
	if a := cmd.SysProcAttr; a == nil || !a.Setpgid || a.Pdeathsig != syscall.SIGKILL {
		t.Errorf("SysProcAttr = %+v, want a new group and Pdeathsig SIGKILL", a)
	}
}
