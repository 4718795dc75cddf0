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
	// ref is the loose ref file of the branch HEAD names, and sha what it
	// held at the start: a branch moved from elsewhere (git update-ref in
	// the main worktree) changes no file the watch sees.
	ref, sha string
}

func startWatch(dir string) watchImpl {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &inotifyWatch{fd: fd}
	dirs, ok := watchDirs(dir)
	gd, err := gitDir(dir)
	if err == nil {
		dirs = append(dirs, gd)
		w.ref, w.sha, err = branchRef(gd)
	}
	if !ok || err != nil {
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

// branchRef returns the loose ref file of the branch that the HEAD in gitDir
// names, and the sha it holds. A detached HEAD, or a branch that is only
// in packed-refs, is an error: a Watch needs a file it can read again.
func branchRef(gitDir string) (file, sha string, err error) {
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", err
	}
	name, found := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !found || !strings.HasPrefix(name, "refs/heads/") {
		return "", "", errors.New("HEAD is not on a branch")
	}
	common := gitDir
	if data, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	file = filepath.Join(common, filepath.FromSlash(name))
	data, err := os.ReadFile(file)
	if err != nil {
		return "", "", err
	}
	return file, string(data), nil
}

func (w *inotifyWatch) untouched() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.touched || w.fd < 0 {
		return false
	}
	var buf [syscall.SizeofInotifyEvent + syscall.NAME_MAX + 1]byte
	_, err := syscall.Read(w.fd, buf[:])
	if errors.Is(err, syscall.EAGAIN) { // no event queued
		if data, err := os.ReadFile(w.ref); err == nil && string(data) == w.sha {
			return true
		}
	}
	// An event is queued, the branch moved, or something is broken: either
	// way, nothing can be vouched for.
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
