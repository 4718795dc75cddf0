//go:build unix

package history

import (
	"os"
	"syscall"
)

// openNonBlocking opens path with O_NONBLOCK, so that opening a named pipe
// returns at once instead of waiting for a writer. Reads of regular files
// are not affected by the flag.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// nonBlock is the open flag that keeps opening a named pipe from blocking.
const nonBlock = syscall.O_NONBLOCK
