//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// Signal is Linux only, as the sandbox is.
func Signal(int, syscall.Signal) error { return errors.New("the sandbox runs on Linux only") }
