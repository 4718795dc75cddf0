//go:build unix && !linux

package claude

import "syscall"

// groupAttr starts the CLI as the leader of its own process group, so that
// a terminal's Ctrl-C reaches only pneuma and a stop can signal the CLI
// with everything its tools started.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
