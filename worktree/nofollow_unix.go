//go:build unix

package worktree

import (
	"fmt"
	"io/fs"
	"syscall"
)

// readSmall reads the regular file at p, up to limit bytes (more is an
// error), never following a symbolic link there and never blocking on a
// FIFO. It uses the system calls alone: an *os.File would register the
// descriptor with the runtime's poller (refused for a regular file) and
// set it blocking again, five calls more a read on a path that reads
// several small git files a job (issue 27).
func readSmall(p string, limit int) ([]byte, error) {
	fd, err := open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	buf := make([]byte, 0, min(max(int(st.Size), 0), limit)+1)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > limit {
				return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "read", Path: p, Err: err}
		case n == 0:
			if len(buf) > limit {
				return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
			}
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// open is syscall.Open, retried on EINTR.
func open(p string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(p, flags, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}
