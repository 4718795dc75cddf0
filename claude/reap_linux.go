//go:build linux

package claude

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// killMarked SIGKILLs every process whose environment holds marker (a
// "KEY=value" entry), and reports how many it signalled. Claude Code's Bash
// tool runs each command in a session of its own, so its background
// processes escape the CLI's process group; the marker, inherited by every
// descendant that keeps its environment, still finds them (the approach of
// Jenkins' ProcessTreeKiller). A few passes catch processes forked while
// the previous pass ran. Only the pids allocated since the CLI (pid, started
// at born) are read, when that window can be told (pidWindow).
func killMarked(marker string, pid int, born time.Time) int {
	needle := []byte("\x00" + marker + "\x00")
	self := os.Getpid()
	killed := map[int]bool{} // a killed process may linger a moment: count it once
	bp := environBuf.Get().(*[]byte)
	defer environBuf.Put(bp)
	for range 3 {
		n := 0
		for _, p := range newPidWindow(pid, born).pids() {
			if p == self || killed[p] {
				continue
			}
			var env []byte
			env, *bp = readProc("/proc/"+strconv.Itoa(p)+"/environ", 1, *bp)
			if len(env) <= 1 {
				continue
			}
			env = append(env, 0) // env[0] is 0 too: every entry is between two
			*bp = env
			if bytes.Contains(env, needle) && syscall.Kill(p, syscall.SIGKILL) == nil {
				killed[p] = true
				n++
			}
		}
		if n == 0 {
			break
		}
	}
	return len(killed)
}

// probeMax is the widest window whose pids are tried one by one; a wider
// one (or every pid) is read from /proc's listing.
const probeMax = 1024

// pids lists the pids that may be in the window: each of a narrow window
// (most are gone: a failed open is cheaper than listing /proc), else the
// running processes that fall in it.
func (w pidWindow) pids() []int {
	if !w.all && w.max > 0 {
		if size := (w.to - w.from + w.max) % w.max; size <= probeMax {
			out := make([]int, 0, size)
			for i := 1; i <= size; i++ {
				out = append(out, (w.from+i-1)%w.max+1)
			}
			return out
		}
	}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range dir {
		if p, err := strconv.Atoi(e.Name()); err == nil && w.contains(p) {
			out = append(out, p)
		}
	}
	return out
}

// pidWindow is the pids the kernel allocated after a process's own: its
// descendants are among them. Linux hands out pids in increasing order,
// wrapping at pid_max, so they are the cyclic interval (from, to], to being
// the last pid allocated (ns_last_pid). That holds unless the counter went
// all the way round since, which needs pid_max forks: the window is only
// used when even maxForkRate forks a second since born could not have
// done it; otherwise, or when /proc does not say, every pid is read.
type pidWindow struct {
	all      bool
	from, to int
	max      int // pid_max: pids wrap to 1 after max-1
}

// maxForkRate bounds the forks a second a machine sustains, to decide
// whether the pid counter can have wrapped all the way round (with the
// common pid_max of 4194304, in 14 minutes; with 32768, in 6 seconds).
const maxForkRate = 5000

func newPidWindow(pid int, born time.Time) pidWindow {
	pidMax, err1 := pidMax()
	last, err2 := readProcInt("/proc/sys/kernel/ns_last_pid")
	if err1 != nil || err2 != nil || pid <= 0 || born.IsZero() || pid >= pidMax || last >= pidMax ||
		time.Since(born) >= time.Duration(pidMax/maxForkRate)*time.Second {
		return pidWindow{all: true}
	}
	return pidWindow{from: pid, to: last, max: pidMax}
}

// pidMax reads /proc/sys/kernel/pid_max once: it is set at boot.
var pidMax = sync.OnceValues(func() (int, error) { return readProcInt("/proc/sys/kernel/pid_max") })

// contains says whether p may have been allocated after from.
func (w pidWindow) contains(p int) bool {
	switch {
	case w.all:
		return true
	case w.from <= w.to:
		return p > w.from && p <= w.to
	default: // the counter wrapped past pid_max
		return p > w.from || p <= w.to
	}
}

func readProcInt(path string) (int, error) {
	var b [32]byte
	data, _ := readProc(path, 0, b[:0])
	if len(data) == 0 {
		return 0, fmt.Errorf("read %s: nothing read", path)
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// environBuf holds killMarked's buffer for the environments it reads.
var environBuf = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// readProc reads the file at path (a /proc file: no size known before it
// is read) into buf after skip zero bytes, growing buf as needed, and
// returns what it read (nil when it could not open it) and buf. It uses
// the system calls themselves: os.ReadFile's stat, its allocation and the
// os.File's poller registration were most of killMarked's cost, read for
// each pid of the window after every CLI (issue 27).
func readProc(path string, skip int, buf []byte) (data, grown []byte) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf
	}
	defer syscall.Close(fd)
	buf = append(buf[:0], make([]byte, skip)...)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, len(buf))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if n <= 0 || err != nil {
			return buf, buf
		}
		buf = buf[:len(buf)+n]
	}
}
