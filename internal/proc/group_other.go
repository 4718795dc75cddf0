//go:build !unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// NewGroup does nothing: there are no process groups here.
func NewGroup(*exec.Cmd) {}

// NewGroupTied does nothing: there are no process groups here.
func NewGroupTied(*exec.Cmd) {}

// Signal can only kill p itself here: an interrupt-like signal cannot be
// delivered, so everything but SIGKILL is a no-op (a stop ladder falls
// through to its kill).
func Signal(p *os.Process, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return nil
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// CancelBy keeps os/exec's default cancellation (kill) where neither process
// groups nor SIGTERM exist.
func CancelBy(*exec.Cmd, syscall.Signal) {}

// ExitSignal is always "": no signal ends a process here.
func ExitSignal(*os.ProcessState) string { return "" }
