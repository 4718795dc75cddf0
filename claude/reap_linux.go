//go:build linux

package claude

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// killMarked SIGKILLs every process whose environment holds marker (a
// "KEY=value" entry), and reports how many it signalled. Claude Code's Bash
// tool runs each command in a session of its own, so its background
// processes escape the CLI's process group; the marker, inherited by every
// descendant that keeps its environment, still finds them (the approach of
// Jenkins' ProcessTreeKiller). A few passes catch processes forked while
// the previous pass ran.
func killMarked(marker string) int {
	needle := []byte("\x00" + marker + "\x00")
	self := os.Getpid()
	total := 0
	for range 3 {
		n := 0
		dir, err := os.ReadDir("/proc")
		if err != nil {
			return total
		}
		for _, e := range dir {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == self {
				continue
			}
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			if err != nil || len(env) == 0 {
				continue
			}
			env = append(append([]byte{0}, env...), 0)
			if bytes.Contains(env, needle) && syscall.Kill(pid, syscall.SIGKILL) == nil {
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
