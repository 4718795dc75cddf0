// Package boxtest is test infrastructure for tests that need the sandbox's
// real boundary (bubblewrap).
package boxtest

import (
	"os"
	"testing"

	"github.com/pneuma-cli/pneuma/sandbox"
)

// Require fails t in CI when bubblewrap cannot run here, and skips it
// elsewhere; what names what needs it, for the failure.
func Require(t testing.TB, what string) {
	t.Helper()
	if _, err := sandbox.Check(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s needs bubblewrap: %v", what, err)
		}
		t.Skip(err)
	}
}
