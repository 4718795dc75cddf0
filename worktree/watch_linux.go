package worktree

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// watchMask is every inotify event that can mean a change git would see: a
// file written, truncated, chmodded or touched, an entry created, deleted
// or renamed, the directory itself deleted or moved.
const watchMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE |
	syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_DELETE_SELF |
	syscall.IN_MOVE_SELF | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO |
	syscall.IN_ONLYDIR | syscall.IN_DONT_FOLLOW

// inotifyWatch watches with one inotify instance. No goroutine reads it:
// the kernel queues events (an overflow is itself an event), and
// untouched asks, without blocking, whether any is queued.
type inotifyWatch struct {
	mu      sync.Mutex
	fd      int // -1 once closed
	touched bool
}

func startWatch(dir string) watchImpl {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &inotifyWatch{fd: fd}
	dirs, ok := watchDirs(dir)
	if gd, err := gitDir(dir); err == nil {
		dirs = append(dirs, gd)
	} else {
		ok = false
	}
	if !ok {
		w.close()
		return nil
	}
	for _, d := range dirs {
		if _, err := syscall.InotifyAddWatch(fd, d, watchMask); err != nil {
			w.close()
			return nil
		}
	}
	return w
}

// watchDirs lists dir and every directory below it, without following
// symbolic links. ok is false when a directory cannot be read or there are
// more than MaxWatchDirs.
func watchDirs(dir string) (dirs []string, ok bool) {
	dirs = []string{dir}
	for i := 0; i < len(dirs); i++ {
		f, err := os.Open(dirs[i])
		if err != nil {
			return nil, false
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return nil, false
		}
		for _, e := range entries {
			if e.IsDir() {
				if len(dirs) == MaxWatchDirs {
					return nil, false
				}
				dirs = append(dirs, filepath.Join(dirs[i], e.Name()))
			}
		}
	}
	return dirs, true
}

// gitDir returns the git directory of the worktree at dir: what its .git
// file points to for a linked worktree, or .git itself.
func gitDir(dir string) (string, error) {
	p := filepath.Join(dir, ".git")
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return p, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	gd, found := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !found || gd == "" {
		return "", errors.New("not a gitdir file: " + p)
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(dir, gd)
	}
	return gd, nil
}

func (w *inotifyWatch) untouched() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.touched || w.fd < 0 {
		return false
	}
	var buf [syscall.SizeofInotifyEvent + syscall.NAME_MAX + 1]byte
	if _, err := syscall.Read(w.fd, buf[:]); errors.Is(err, syscall.EAGAIN) {
		return true // no event queued
	}
	// An event is queued, or the instance is broken: either way, nothing
	// can be vouched for.
	w.touched = true
	return false
}

func (w *inotifyWatch) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return nil
	}
	err := syscall.Close(w.fd)
	w.fd = -1
	return err
}
