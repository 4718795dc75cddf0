package runner

import "github.com/pneuma-cli/pneuma/internal/tail"

// tailKeep is how much of the end of stderr a job keeps in memory, for
// error messages.
const tailKeep = 4096

// tailFile is a CLI's stderr.log: the first limit bytes as they come, then,
// at Close, a note of what was left out and the last limit/4 bytes.
type tailFile = tail.File

// newTailFile returns a bounded stderr log at path, created by the first
// byte the CLI writes to stderr.
func newTailFile(path string, limit int) *tailFile {
	return tail.NewFile(newLazyFile(path, "stderr log"), "stderr", limit, max(limit/4, tailKeep))
}
