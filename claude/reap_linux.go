//go:build linux

package claude

import (
	"bytes"
	"os"
	"strconv"
	"strings"
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
	total := 0
	for range 3 {
		n := 0
		w := newPidWindow(pid, born)
		dir, err := os.ReadDir("/proc")
		if err != nil {
			return total
		}
		for _, e := range dir {
			p, err := strconv.Atoi(e.Name())
			if err != nil || p == self || !w.contains(p) {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || len(env) == 0 {
				continue
			}
			env = append(append([]byte{0}, env...), 0)
			if bytes.Contains(env, needle) && syscall.Kill(p, syscall.SIGKILL) == nil {
				n++
			}
		}
		total += n
		if n == 0 {
			break
		}
	}
	return total
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
}

// maxForkRate bounds the forks a second a machine sustains, to decide
// whether the pid counter can have wrapped all the way round (with the
// common pid_max of 4194304, in 14 minutes; with 32768, in 6 seconds).
const maxForkRate = 5000

func newPidWindow(pid int, born time.Time) pidWindow {
	pidMax, err1 := readProcInt("/proc/sys/kernel/pid_max")
	last, err2 := readProcInt("/proc/sys/kernel/ns_last_pid")
	if err1 != nil || err2 != nil || pid <= 0 || born.IsZero() ||
		time.Since(born) >= time.Duration(pidMax/maxForkRate)*time.Second {
		return pidWindow{all: true}
	}
	return pidWindow{from: pid, to: last}
}

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
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}
