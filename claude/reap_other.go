//go:build !linux

package claude

// killMarked finds nothing where /proc is unavailable: only the process
// group kill applies there.
func killMarked(string) int { return 0 }
