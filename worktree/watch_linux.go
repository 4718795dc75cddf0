package worktree

import (
	"bytes"
	"encoding/binary"
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
	// The watch descriptors of the worktree's top directory and of its git
	// directory (gitDir, its path), whose events a reuse causes.
	rootWD, gitWD int
	gitDir        string
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
		w.gitDir = gd
		w.ref, w.sha, err = branchRef(gd)
	}
	// Without a watch callers scan; the fd just opened has nothing to lose
	// on close.
	if !ok || err != nil {
		_ = w.close()
		return nil
	}
	for i, d := range dirs {
		wd, err := syscall.InotifyAddWatch(fd, d, watchMask)
		if err != nil {
			_ = w.close()
			return nil
		}
		switch i {
		case 0:
			w.rootWD = wd
		case len(dirs) - 1:
			w.gitWD = wd
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
		_ = f.Close() // read-only directory handle: nothing to flush
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

// branchRef returns the loose ref file of the branch that the HEAD in gitDir
// names, and the sha it holds. A detached HEAD, or a branch that is only
// in packed-refs, is an error: a Watch needs a file it can read again.
func branchRef(gitDir string) (file, sha string, err error) {
	head, err := readSmall(filepath.Join(gitDir, "HEAD"), maxLink)
	if err != nil {
		return "", "", err
	}
	name, found := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !found || !strings.HasPrefix(name, "refs/heads/") {
		return "", "", errors.New("HEAD is not on a branch")
	}
	common := gitDir
	if data, err := readSmall(filepath.Join(gitDir, "commondir"), maxLink); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	file = filepath.Join(common, filepath.FromSlash(name))
	data, err := readSmall(file, maxLink)
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
		if holds(w.ref, w.sha) {
			return true
		}
	}
	// An event is queued, the branch moved, or something is broken: either
	// way, nothing can be vouched for.
	w.touched = true
	return false
}

// holds says whether the file at path holds exactly want (a loose ref: a
// sha and a newline), read with the system calls themselves into a buffer
// on the stack: asked before each reuse, os.ReadFile's stat, allocation and
// poller registration were most of its cost (issue 27). A longer file, or
// one it cannot read, does not hold want.
func holds(path, want string) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var buf [128]byte
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if m == 0 {
			return string(buf[:n]) == want
		}
		n += m
	}
	return false // longer than any ref
}

// rearm reads every queued event and accepts only those of a reuse: the
// top directory moved, its .git link rewritten, and in the git directory
// HEAD, gitdir (the worktree's new path) and the reflog directory written.
// Anything else, an overflow included, is a change.
func (w *inotifyWatch) rearm(dir string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.touched || w.fd < 0 {
		return false
	}
	ok := w.drain(func(wd int, mask uint32, name string) bool {
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			return false
		case wd == w.rootWD:
			return mask&syscall.IN_MOVE_SELF != 0 && name == "" || name == ".git" || name == ".git.lock"
		case wd == w.gitWD:
			switch name {
			case "HEAD", "HEAD.lock", "gitdir", "gitdir.lock", "logs":
				return true
			}
		}
		return false
	})
	if ok {
		// Still the same git directory, now on a branch at the same commit.
		gd, err := gitDir(dir)
		ref, sha := "", ""
		if err == nil && gd == w.gitDir {
			ref, sha, err = branchRef(gd)
		}
		ok = err == nil && gd == w.gitDir && sha == w.sha
		if ok {
			w.ref = ref
		}
	}
	w.touched = !ok
	return ok
}

// drain reads the queued events until none is left, and reports whether
// accept took every one of them.
func (w *inotifyWatch) drain(accept func(wd int, mask uint32, name string) bool) bool {
	var buf [64 * (syscall.SizeofInotifyEvent + syscall.NAME_MAX + 1)]byte
	ok := true
	for {
		n, err := syscall.Read(w.fd, buf[:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return ok
		}
		if err != nil || n < syscall.SizeofInotifyEvent {
			return false
		}
		// struct inotify_event: int wd; u32 mask, cookie, len; char name[len]
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			end := off + syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[off+12:]))
			if end > n {
				return false
			}
			name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:end], "\x00"))
			ok = ok && accept(int(wd), mask, name)
			off = end
		}
	}
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
