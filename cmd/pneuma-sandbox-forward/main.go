// Command pneuma-sandbox-forward is the small forwarder pneuma runs as the
// first process inside a job's sandbox when it finds it beside its own
// executable (see package sandbox/forward). Without it pneuma runs its own
// binary there, which starts slower.
package main

import (
	"fmt"
	"os"

	"github.com/pneuma-cli/pneuma/sandbox/forward"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != forward.Command {
		fmt.Fprintln(os.Stderr, "pneuma-sandbox-forward runs inside a pneuma job's sandbox; pneuma starts it")
		os.Exit(2)
	}
	os.Exit(forward.Run(os.Args[2:], forward.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
