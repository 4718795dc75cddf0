package forward

import "syscall"

// childAttr ties the CLI to the forwarder: if the forwarder dies, so does it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
