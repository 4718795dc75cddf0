package proc

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// AwaitExit returns once p has exited, leaving it to be reaped: a Wait
// after it reaps p and reads its status without blocking. It waits on a
// pidfd in the runtime's network poller, not in a blocking wait system
// call. A goroutine blocked in waitid holds its scheduler P until the
// runtime's monitor takes it back (up to 10 ms later when other Ps are
// idle); with the one P `pneuma run` gives itself (cmd's runProcs), that
// stalled every other job's events for as long. Where pidfds are missing
// (Linux before 5.10) it returns at once and Wait blocks as before.
func AwaitExit(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd is readable once its process has exited; Read calls exited
	// again each time the poller says so.
	_ = rc.Read(func(fd uintptr) bool { return exited(int(fd)) })
}

// exited polls the pidfd fd without waiting: true once the process has
// exited, or when the poll fails in a way waiting would not mend.
func exited(fd int) bool {
	ready := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(ready, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return true // Wait blocks instead
		}
		return n > 0
	}
}
