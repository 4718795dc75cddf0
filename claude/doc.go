// Package claude drives the Claude Code CLI: it finds the binary, builds its
// arguments from typed Options, runs it in its own process group in
// stream-json mode (`claude -p --input-format stream-json --output-format
// stream-json --verbose`), decodes its stdout into typed Events, answers its
// control requests, and stops it gracefully (interrupt, SIGINT, SIGTERM,
// SIGKILL of the group).
//
// It knows nothing about jobs, worktrees or reports. The facts it relies on
// were measured on CLI 2.1.197 (the pinned version).
package claude
