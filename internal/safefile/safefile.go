// Package safefile reads the files pneuma reads on someone else's behalf (a
// server client's prompt file, output schema or jobs file): only a regular
// file, opened without blocking, at most a given size, and, when roots are
// given, only under one of them. It also checks client-named paths against
// the roots in the order that leaks nothing: lexically first, before
// anything touches the path, then with symlinks resolved.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MaxSize is the documented cap on a file read for a client (1 MiB): prompt
// files, output schemas and jobs files are text a person wrote.
const MaxSize = 1 << 20

// ErrNotRegular is a path that names a device, FIFO, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is a file over the cap.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the %d bytes allowed", e.Max)
}

// OutsideError is a path outside every root, or one whose resolution
// failed. It names the path as given and nothing found on disk: neither
// whether it exists nor where a symlink points.
type OutsideError struct {
	Path  string
	Roots []string
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("%s is not under any root (%s)", e.Path, strings.Join(e.Roots, ", "))
}

// Read reads the regular file at path, of at most max bytes (MaxSize when
// max <= 0), under one of roots (any path when there are none). The open
// never blocks (O_NONBLOCK: a FIFO without a writer does not hang it) and
// the type is checked on the open file, so a path swapped for a device
// between check and read is still refused. Under roots the file opened is
// the checked one, resolved, opened inside its root (os.Root): a symlink
// swapped in after the check reaches nothing outside the root.
func Read(path string, roots []string, max int64) ([]byte, error) {
	if max <= 0 {
		max = MaxSize
	}
	var f *os.File
	var err error
	if len(roots) > 0 {
		f, err = openUnder(path, roots, max)
	} else {
		f, _, err = Open(path, max)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max { // it grew after the stat
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	return data, nil
}

// Open opens the regular file at path for reading, without blocking, if
// it is at most max bytes; the type and size are checked on the open file
// and returned with it. A file that grows after the open is the caller's
// to bound (io.LimitReader to the size returned).
func Open(path string, max int64) (*os.File, fs.FileInfo, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return checkOpen(os.NewFile(uintptr(fd), path), path, max)
}

// checked runs between the roots check and the open; tests swap the file
// there.
var checked = func() {}

// openUnder checks path against roots and opens what was checked: its
// resolved path, inside the resolved root that holds it, never following
// a link out of that root. Errors name path as given, nothing resolved.
func openUnder(path string, roots []string, max int64) (*os.File, error) {
	real, root, err := checkRoots(path, roots)
	if err != nil {
		return nil, err
	}
	checked()
	rel, err := filepath.Rel(root, real)
	if err != nil {
		return nil, &OutsideError{Path: path, Roots: roots}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, &OutsideError{Path: path, Roots: roots}
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f, _, err = checkOpen(f, path, max)
	return f, err
}

// checkOpen keeps f if it is a regular file of at most max bytes, else
// closes it.
func checkOpen(f *os.File, path string, max int64) (*os.File, fs.FileInfo, error) {
	st, err := f.Stat()
	switch {
	case err != nil:
	case !st.Mode().IsRegular():
		err = &fs.PathError{Op: "read", Path: path, Err: ErrNotRegular}
	case st.Size() > max:
		err = &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Lexical reports whether the cleaned absolute path is inside one of roots
// as written or as resolved, without touching the path itself.
func Lexical(path string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	p := filepath.Clean(path)
	for _, r := range roots {
		if inside(p, filepath.Clean(r)) {
			return true
		}
		if real, err := filepath.EvalSymlinks(r); err == nil && inside(p, real) {
			return true
		}
	}
	return false
}

// CheckRoots checks a client-named absolute path against roots in order:
// lexically (before the path is touched), then with symlinks resolved. A
// path that does not exist is resolved as far as it exists, so that a
// missing path under a root is told apart (exists false, no error: the
// caller answers 400) from one outside (an *OutsideError: 403). Any other
// error resolving it is an *OutsideError too, which says nothing of what
// is on disk. real is the resolved path.
func CheckRoots(path string, roots []string) (real string, err error) {
	real, _, err = checkRoots(path, roots)
	return real, err
}

// checkRoots is CheckRoots that also returns the resolved root holding
// real ("" when there are no roots).
func checkRoots(path string, roots []string) (real, root string, err error) {
	outside := &OutsideError{Path: path, Roots: roots}
	if !filepath.IsAbs(path) || !Lexical(path, roots) {
		return "", "", outside
	}
	real, err = resolve(filepath.Clean(path))
	if err != nil {
		return "", "", outside
	}
	if len(roots) == 0 {
		return real, "", nil
	}
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil && inside(real, rr) {
			return real, rr, nil
		}
	}
	return "", "", outside
}

// resolve is EvalSymlinks for a path whose tail may not exist: the longest
// existing prefix is resolved and the missing rest joined to it.
func resolve(p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err == nil {
		return real, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if _, lerr := os.Lstat(p); lerr == nil {
		return "", err // it exists but a link in it dangles
	}
	parent := filepath.Dir(p)
	if parent == p {
		return "", err
	}
	rp, err := resolve(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(rp, filepath.Base(p)), nil
}

func inside(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
