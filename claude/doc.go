// Package claude drives the Claude Code CLI: it finds the binary, builds its
// arguments from typed Options, runs it in its own process group in
// stream-json mode (`claude -p --input-format stream-json --output-format
// stream-json --verbose`), decodes its stdout into typed Events, answers its
// control requests, and stops it gracefully (interrupt, SIGINT, SIGTERM,
// SIGKILL of the group). Once the CLI has exited, nothing it started
// survives: its group is killed, and so is every process carrying its
// MarkerEnv, since the Bash tool runs commands in sessions of their own.
//
// It knows nothing about jobs, worktrees or reports. The facts it relies on
// were measured on CLI 2.1.197 (the pinned version).
package claude
