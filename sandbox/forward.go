package sandbox

import "github.com/pneuma-cli/pneuma/sandbox/forward"

// ForwardCommand is the hidden first argument that makes pneuma's binary
// (or the small pneuma-sandbox-forward) the forwarder inside a sandbox
// (see package forward).
const ForwardCommand = forward.Command

// ForwarderName is the small forwarder binary's name: found beside
// pneuma's own executable, it runs inside each sandbox instead of pneuma's
// binary, whose package initialisation costs milliseconds per job start.
const ForwarderName = "pneuma-sandbox-forward"

// Stdio are the standard streams the forwarder hands to the command.
type Stdio = forward.Stdio

// RunForwarder runs the forwarder when args (the process's arguments
// after its name) start with ForwardCommand, and returns its exit code and
// true; otherwise it returns at once with false. Call it first in main (and
// in the TestMain of tests whose binary stands in for pneuma's).
func RunForwarder(args []string, stdio Stdio) (int, bool) {
	if len(args) == 0 || args[0] != ForwardCommand {
		return 0, false
	}
	return forward.Run(args[1:], stdio), true
}
