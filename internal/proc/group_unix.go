//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// NewGroup makes cmd start as the leader of a new process group whose id is
// its pid. Call it before cmd.Start; it replaces cmd.SysProcAttr.
func NewGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// NewGroupTied is NewGroup, and where the kernel supports it (Linux) the
// child is sent SIGKILL when pneuma dies, even by SIGKILL, so no child
// outlives it. The kernel sends that signal when the thread that started the
// child exits; Go keeps its threads for the life of the process.
func NewGroupTied(cmd *exec.Cmd) { cmd.SysProcAttr = tiedAttr() }

// Signal sends sig to every process in p's group (p must lead it, see
// NewGroup). A group that no longer exists is not an error.
func Signal(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// CancelBy makes the cancellation of cmd's context (exec.CommandContext)
// send sig to cmd's whole group instead of killing only cmd's process.
func CancelBy(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, sig)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS",
	syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2",
}

// ExitSignal names the signal that ended the process ("SIGKILL"), or "" when
// it exited on its own.
func ExitSignal(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	if name, ok := signalNames[ws.Signal()]; ok {
		return name
	}
	return ws.Signal().String()
}
