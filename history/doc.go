// Package history reads Claude Code's session history: it locates sessions
// under $CLAUDE_CONFIG_DIR/projects (or ~/.claude/projects) with the CLI's own
// project-directory encoding, reads transcripts robustly (lines of many MB, a
// torn last line, unknown entry types, malformed lines counted and skipped,
// named pipes, directories and symlink loops named like transcripts skipped
// with a warning), threads entries and the subagents of every CLI generation
// (inline sidechains of 1.0.x, top-level agent files of 2.0.x, subagents/
// directories since, and the workflow runs of 2.1.332 under
// subagents/workflows/<run>/, nested after their Workflow call), deduplicates usage by (message id, request id) at a
// response's final line and across files, prices it with an embedded table,
// exports sessions (Markdown, JSON, HTML, text; terminal escapes removed,
// secrets redacted) and archives them.
//
// The facts it relies on are measured in the shared CLI reference, section 4
// and pitfalls 1-6 and 15-20.
package history
