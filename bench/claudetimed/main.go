// Command claudetimed is the CLI as scripts/bench-run.sh gives it to pneuma
// (--claude): it runs the real CLI ($BENCH_CLAUDE) with pneuma's argv and
// stdio, then appends "CWD START_US END_US" to $BENCH_CLI_TIMES, so that the
// benchmark knows each CLI process's wall time. Its own start-up (about a
// millisecond) counts as pneuma's overhead.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	start := time.Now()
	// The CLI shares the process group, so pneuma's signals reach it
	// directly; this wrapper outlives it to take the time.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	cmd := exec.Command(os.Getenv("BENCH_CLAUDE"), os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	end := time.Now()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
		if code < 0 {
			code = 128 + 9 // killed by a signal
		}
	case err != nil:
		fmt.Fprintln(os.Stderr, "claudetimed:", err)
		code = 127
	}
	cwd, _ := os.Getwd()
	if f, err := os.OpenFile(os.Getenv("BENCH_CLI_TIMES"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		fmt.Fprintf(f, "%s %d %d\n", cwd, start.UnixMicro(), end.UnixMicro())
		f.Close()
	}
	os.Exit(code)
}
