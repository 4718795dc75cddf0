//go:build unix

package serve

import (
	"errors"
	"os"
	"syscall"
)

// errLocked says another process holds the lock.
var errLocked = syscall.EWOULDBLOCK

// flock takes f's exclusive lock without waiting.
func flock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
