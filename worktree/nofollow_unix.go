//go:build unix

package worktree

import "syscall"

// oNoFollow makes an open fail on a symbolic link (readLink).
const oNoFollow = syscall.O_NOFOLLOW
