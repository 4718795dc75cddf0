//go:build unix

package worktree

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts git in its own process group, so a Ctrl-C on the terminal
// reaches pneuma only (which may still want to commit leftover work), and
// makes cancellation send SIGTERM to that group: git removes its lock files
// and half-made worktrees on SIGTERM, while SIGKILL would leave a stale
// index.lock behind that blocks every later git command in that repository.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
