package serve

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// StateLockedError is a state directory another server holds: two servers
// on one state directory would interleave the seqs of one log.
type StateLockedError struct {
	Dir string
	PID int // 0 when the holder had not written it yet
}

func (e *StateLockedError) Error() string {
	holder := "another pneuma serve"
	if e.PID > 0 {
		holder += fmt.Sprintf(" (pid %d)", e.PID)
	}
	return fmt.Sprintf("state directory %s is in use by %s; stop it or give another --state-dir", e.Dir, holder)
}

// stateLock is the exclusive lock on a state directory: <dir>/lock, flock'd
// for the server's life and holding its pid. The kernel drops the lock with
// the process, so a killed server leaves no stale lock (the file stays; a
// pid in it is only what the error tells).
type stateLock struct{ f *os.File }

// lockState takes the state directory's lock, or fails at once with a
// *StateLockedError naming the holder.
func lockState(dir string) (*stateLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := flock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errLocked) {
			data, _ := io.ReadAll(io.LimitReader(f, 32))
			pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
			return nil, &StateLockedError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0) // the pid is a hint for the error above
	}
	return &stateLock{f: f}, nil
}

// release drops the lock (closing the file does).
func (l *stateLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
