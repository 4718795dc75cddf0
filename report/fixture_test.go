package report

import (
	"testing"
	"time"
)

// nasty is model output at its worst: colours, cursor movement, an OSC
// hyperlink, every C0 control, emoji, a CDATA terminator and XML markup.
const nasty = "\x1b[1;31mError\x1b[0m: build \x1b[2Kfailed ✗ 🚀\n" +
	"\x1b]8;;https://example.com\x07link\x1b]8;;\x07 ]]> <tag attr=\"x\"> & done\n" +
	"ctl: \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1c\x1d\x1e\x1f end\r\n" +
	"bad utf8: \xff\xfe \xed\xa0\x80 nonchars: \ufffe\uffff ok\t| pipe"

// mixedReport is a run with one job of each status, the way the runner fills
// a report.
func mixedReport() *Report {
	start := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	r := &Report{
		Schema:     Schema,
		RunID:      "20261122-130000-ab12",
		StartedAt:  start,
		FinishedAt: start.Add(3*time.Minute + 7*time.Second),
		Budget:     &Budget{CapUSD: 5, SpentUSD: 0.1622},
		Jobs: []Job{
			{
				Name: "lint", Position: 0, Status: StatusSucceeded, SessionID: "0b5c8e0e-1111-4a7e-9a50-000000000001",
				Model: "claude-opus-4-8", CostUSD: 0.012375,
				Usage:      Usage{InputTokens: 1200, OutputTokens: 80, CacheReadInputTokens: 5000, CacheCreationInputTokens: 300},
				ModelUsage: map[string]ModelUsage{"claude-opus-4-8[1m]": {InputTokens: 1200, OutputTokens: 80, CacheReadInputTokens: 5000, CacheCreationInputTokens: 300, CostUSD: 0.012375}},
				NumTurns:   3, DurationMS: 12400, Result: "All clean. " + nasty,
				Repo: "/src/app", Branch: "pneuma/20261122-130000-ab12/lint", Base: "main", Commit: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
				FilesChanged: 3, Insertions: 10, Deletions: 2, ToolCalls: 7,
				Transcript: "jobs/lint/transcript/0b5c8e0e-1111-4a7e-9a50-000000000001.jsonl", Stream: "jobs/lint/stream.jsonl",
			},
			{
				Name: "fix|tests", Position: 1, Status: StatusFailed, Reason: ReasonMaxTurns, SessionID: "0b5c8e0e-1111-4a7e-9a50-000000000002",
				CostUSD: 0.1498, Usage: Usage{InputTokens: 45000, OutputTokens: 3200}, NumTurns: 20, DurationMS: 187000, ExitCode: 1,
				Error:  "Reached maximum number of turns (20)\n" + nasty,
				Result: nasty, PermissionDenials: []PermissionDenial{{ToolName: "Bash", ToolUseID: "toolu_01", ToolInput: map[string]any{"command": "rm -rf /"}}},
				Repo: "/src/app", Branch: "pneuma/20261122-130000-ab12/fix-tests", Base: "main", FilesChanged: 1, Insertions: 4, ToolCalls: 31, ToolDenials: 1,
				Attempts: []Attempt{
					{Number: 1, Status: StatusFailed, Reason: ReasonAPIError, CostUSD: 0.01, DurationMS: 3000, ExitCode: 1, Error: "API Error: 529 overloaded"},
					{Number: 2, Status: StatusFailed, Reason: ReasonMaxTurns, CostUSD: 0.1398, DurationMS: 184000, ExitCode: 1, Error: "Reached maximum number of turns (20)"},
				},
			},
			{Name: "docs", Position: 2, Status: StatusSkipped, Reason: ReasonBudget, Error: "the run's budget ($5.00) was spent", ExitCode: -1, Repo: "/src/app", Base: "main"},
			{
				Name: "refactor", Position: 3, Status: StatusInterrupted, Reason: ReasonInterrupted, SessionID: "0b5c8e0e-1111-4a7e-9a50-000000000004",
				CostUSD: 0.0001, CostEstimated: true, Usage: Usage{InputTokens: 10, OutputTokens: 1}, NumTurns: 1, DurationMS: 850, ExitCode: 143,
				Error: "stopped by SIGINT", Repo: "/src/app", Base: "main", Worktree: "/src/app/.pneuma/worktrees/20261122-130000-ab12/refactor",
			},
		},
	}
	r.Tally(true)
	return r
}

// validJSON encodes r and checks it against the schema, as every report the
// tests produce must be.
func validJSON(t *testing.T, r *Report) []byte {
	t.Helper()
	data, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(data); err != nil {
		t.Fatalf("report does not validate: %v\n%s", err, data)
	}
	return data
}
