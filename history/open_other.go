//go:build !unix

package history

import "os"

// openNonBlocking opens path; named pipes are not files on these systems.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }

// nonBlock is none: named pipes are not files on these systems.
const nonBlock = 0
