//go:build unix && !linux

package proc

import "syscall"

// tiedAttr is a plain new group: only Linux has a parent-death signal.
func tiedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
