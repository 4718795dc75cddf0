package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHolds: holds compares a whole file, not a prefix, and says no for a
// missing file and one longer than a ref.
func TestHolds(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref")
	sha := strings.Repeat("a", 40) + "\n"
	if err := os.WriteFile(ref, []byte(sha), 0o644); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte(strings.Repeat(sha, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{ref, sha, true},
		{ref, sha[:40], false},
		{ref, sha + "x", false},
		{long, strings.Repeat(sha, 10), false},
		{filepath.Join(dir, "missing"), "", false},
	} {
		if got := holds(tc.path, tc.want); got != tc.ok {
			t.Errorf("holds(%s, %q) = %v", filepath.Base(tc.path), tc.want, got)
		}
	}
}
