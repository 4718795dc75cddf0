//go:build !unix

package worktree

import "os/exec"

// setProcAttr keeps exec's default cancellation (kill) where process groups
// and SIGTERM do not exist.
func setProcAttr(cmd *exec.Cmd) {}
