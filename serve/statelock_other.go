//go:build !unix

package serve

import (
	"errors"
	"os"
)

// errLocked says another process holds the lock.
var errLocked = errors.New("locked")

// flock is not available here: the state directory is not locked (pneuma
// serve is built and tested on Linux and macOS; docs/serve.md says so).
func flock(*os.File) error { return nil }
