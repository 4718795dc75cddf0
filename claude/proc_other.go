//go:build !unix

package claude

import (
	"os"
	"syscall"
)

func groupAttr() *syscall.SysProcAttr { return nil }

// groupSignal has no process groups to use here: an interrupt-like signal
// cannot be delivered, so everything but SIGKILL is a no-op and the stop
// ladder falls through to killing the process.
func groupSignal(p *os.Process, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		err := p.Kill()
		if err == os.ErrProcessDone {
			return nil
		}
		return err
	}
	return nil
}

func exitSignal(*os.ProcessState) string { return "" }
