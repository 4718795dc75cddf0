//go:build !unix

package worktree

// oNoFollow is not available here: readLink checks the type after opening.
const oNoFollow = 0
