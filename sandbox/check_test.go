package sandbox

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckRefusesOtherSystems(t *testing.T) {
	_, err := check("darwin")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "darwin") {
		t.Fatalf("check(darwin) = %v, want ErrUnsupported naming darwin", err)
	}
}

func TestCheckNamesMissingBubblewrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Check()
	if err == nil || !strings.Contains(err.Error(), "bubblewrap (bwrap) is not installed") {
		t.Fatalf("Check without bwrap on PATH = %v, want it to name bubblewrap", err)
	}
}
