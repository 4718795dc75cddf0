package cmd

import "fmt"

// unsupportedOS are the systems pneuma builds on but refuses to run on. On
// Windows there are no process groups or interrupt signals to stop Claude
// Code and the tool processes it starts, so a job could not be stopped in
// order and its tools could outlive it; CI builds it there only to keep the
// code portable.
var unsupportedOS = map[string]bool{"windows": true}

// platformError says why pneuma does not run on goos (runtime.GOOS), or nil.
func platformError(goos string) error {
	if unsupportedOS[goos] {
		return fmt.Errorf("%s is not supported: pneuma needs Unix process groups and signals to stop Claude Code and the processes its tools start; run it on Linux or macOS, or under WSL 2", goos)
	}
	return nil
}
