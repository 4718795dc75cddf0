package sandbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// errNoForwarder: no forwarder runs under the given bubblewrap (yet, or
// any more).
var errNoForwarder = errors.New("no sandbox forwarder found")

// Signal sends sig to the forwarder running in the sandbox that
// bubblewrap process bwrap started; the forwarder passes it on to the
// command it runs (the CLI). Bubblewrap itself passes no signal on: sent
// to it, SIGINT or SIGTERM would end the whole sandbox at once.
func Signal(bwrap int, sig syscall.Signal) error {
	pid, err := forwarderOf(bwrap)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, sig)
}

// forwarderOf finds the forwarder among bwrap's descendants (its child
// is the sandbox's init, whose child is the forwarder).
func forwarderOf(bwrap int) (int, error) {
	children := childrenByParent()
	level := []int{bwrap}
	for depth := 0; depth < 3 && len(level) > 0; depth++ {
		var next []int
		for _, p := range level {
			for _, c := range children[p] {
				if isForwarder(c) {
					return c, nil
				}
				next = append(next, c)
			}
		}
		level = next
	}
	return 0, errNoForwarder
}

// childrenByParent maps each process to its children, from /proc.
func childrenByParent() map[int][]int {
	out := map[int][]int{}
	entries, _ := os.ReadDir("/proc") // unreadable: no children found, the caller falls back
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(fields[1]); err == nil {
			out[ppid] = append(out[ppid], pid)
		}
	}
	return out
}

func isForwarder(pid int) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	args := bytes.Split(cmdline, []byte{0})
	return len(args) > 1 && string(args[1]) == ForwardCommand
}
