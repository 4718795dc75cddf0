package history

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is the cause of an UnreadableError for a path that is a
// directory, named pipe, socket or device rather than a file.
var ErrNotRegular = errors.New("not a regular file")

// UnreadableError is a history file that cannot be read: a named pipe or a
// directory named like a transcript, a symlink loop, a permission denied.
type UnreadableError struct {
	Path string
	Err  error
}

func (e *UnreadableError) Error() string { return fmt.Sprintf("cannot read %s: %v", e.Path, e.Err) }

// Unwrap returns the cause.
func (e *UnreadableError) Unwrap() error { return e.Err }

// Warning is one file of the history that was skipped; everything else is
// still read.
type Warning struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

func (w Warning) String() string { return w.Path + ": " + w.Problem }

// warningOf turns an UnreadableError (or any error about path) into a Warning.
func warningOf(path string, err error) Warning {
	var u *UnreadableError
	if errors.As(err, &u) {
		return Warning{Path: u.Path, Problem: u.Err.Error()}
	}
	return Warning{Path: path, Problem: err.Error()}
}

// checkRegular follows symlinks (the kernel reports loops) and accepts only
// regular files.
func checkRegular(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &UnreadableError{Path: path, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, &UnreadableError{Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(fi.Mode()))}
	}
	return fi, nil
}

// openFile opens a history file for reading without ever blocking on it: a
// named pipe named like a transcript would block a plain open forever. The
// path is checked before the open and the open file after it (the path can
// be replaced in between).
func openFile(path string) (*os.File, error) {
	if _, err := checkRegular(path); err != nil {
		return nil, err
	}
	f, err := openNonBlocking(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &UnreadableError{Path: path, Err: err}
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", ErrNotRegular, kindOf(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, &UnreadableError{Path: path, Err: err}
	}
	return f, nil
}

// readSmallFile reads a small side file (a subagent's meta.json) with the
// same care as a transcript, up to limit bytes.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	}
	return "not a file"
}
