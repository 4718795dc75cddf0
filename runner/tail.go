package runner

import (
	"fmt"
	"os"

	"github.com/pneuma-cli/pneuma/internal/tail"
)

// tailKeep is how much of the end of stderr a job keeps in memory, for
// error messages.
const tailKeep = 4096

// tailFile is a CLI's stderr.log: the first limit bytes as they come, then,
// at Close, a note of what was left out and the last limit/4 bytes.
type tailFile = tail.File

// newTailFile opens path for a bounded stderr log.
func newTailFile(path string, limit int) (*tailFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open stderr log: %w", err)
	}
	return tail.NewFile(f, "stderr", limit, max(limit/4, tailKeep)), nil
}
