//go:build !unix

package worktree

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readSmall reads the regular file at p, up to limit bytes (more is an
// error).
func readSmall(p string, limit int) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0) // no O_NOFOLLOW here: the type is checked after opening
	if err != nil {
		return nil, err
	}
	defer f.Close() // read-only: nothing to flush
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, limit)
	}
	return data, nil
}
