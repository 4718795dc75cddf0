//go:build !linux

package worktree

// startWatch has no change notification to use here: a Watch on this system
// is never Untouched, and callers always scan.
func startWatch(string) watchImpl { return nil }
