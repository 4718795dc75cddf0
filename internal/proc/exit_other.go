//go:build !linux

package proc

import "os"

// AwaitExit returns at once: without pidfds, Wait blocks until p exits.
func AwaitExit(*os.Process) {}
