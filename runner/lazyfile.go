package runner

import (
	"fmt"
	"os"
	"sync"
)

// lazyFile is a record that exists only once something is written to it:
// most jobs write no stderr and many no audit lines, and creating a file
// is one of the dearest things a job start does (a new inode, and on a
// busy disk a millisecond of CPU).
type lazyFile struct {
	path, what string // what names the record in errors ("stderr log")

	mu     sync.Mutex
	f      *os.File
	err    error // the open's error, returned by every write after it
	closed bool
}

func newLazyFile(path, what string) *lazyFile { return &lazyFile{path: path, what: what} }

// Write creates the file on the first call and appends p.
func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, fmt.Errorf("write %s: %w", l.what, os.ErrClosed)
	}
	if l.f == nil && l.err == nil {
		if l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); l.err != nil {
			l.err = fmt.Errorf("open %s: %w", l.what, l.err)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// written says whether the file was created.
func (l *lazyFile) written() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

// Close closes the file if it was created. It is safe to call more than once.
func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	wasClosed := l.closed
	l.closed = true
	if wasClosed || l.f == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", l.what, err)
	}
	return nil
}
