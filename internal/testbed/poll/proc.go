package poll

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"
)

// Gone reports whether process pid is gone within timeout: exited, or a
// zombie nobody has reaped yet. It reads /proc; where /proc is missing it
// fails the test at once (t.Fatal), because a leak check that cannot look
// must not pass.
func Gone(t testing.TB, pid int, timeout time.Duration) bool {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Fatalf("cannot check whether process %d is gone: %v (the leak checks need Linux's /proc)", pid, err)
	}
	return Until(timeout, func() bool { return !Running(pid) })
}

// Running reports whether pid is a live process now, per /proc (a zombie is
// not). Without /proc it reports false; see Gone.
func Running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) STATE ...": the state follows the ")" that ends the
	// command name, which may itself hold ")".
	i := bytes.LastIndexByte(data, ')')
	return !(i > 0 && len(data) > i+2 && (data[i+2] == 'Z' || data[i+2] == 'X'))
}
