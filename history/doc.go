// Package history reads Claude Code's session history: it locates sessions
// under $CLAUDE_CONFIG_DIR/projects (or ~/.claude/projects) with the CLI's own
// project-directory encoding, reads transcripts robustly (lines of many MB, a
// torn last line, unknown entry types, malformed lines counted and skipped),
// threads entries and subagent sidechains, deduplicates usage across files
// and prices it with an embedded table, exports sessions (Markdown, JSON,
// HTML, text, secrets redacted) and archives them.
//
// The facts it relies on are measured in the shared CLI reference, section 4
// and pitfalls 1-6 and 15-20.
package history
