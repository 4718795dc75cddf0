package live

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/runner"
)

// resultMax bounds a tool result's line in `pneuma logs`.
const resultMax = 160

// Decisions says how pneuma decided a tool call, by its tool_use id: a
// short text such as "deny: Bash(rm -rf *)", or "" when not known.
type Decisions func(toolUseID string) string

// StreamLines are one line of a job's stream.jsonl for a person (pneuma
// logs): the assistant's text, each tool call with a short, redacted input,
// a tool's result shortened and, when decided knows it, pneuma's
// permission decision on the call, API retries, and the result with its
// cost. Lines a person does not read (stream deltas, keep-alives, control)
// are none. worktree, when known, makes the job's paths relative; decided
// may be nil.
func StreamLines(line []byte, worktree string, decided Decisions) []string {
	ev := claude.Decode(line)
	switch {
	case ev.Init != nil:
		return []string{fmt.Sprintf("── session %s · %s · claude %s", ev.Init.SessionID, ev.Init.Model, ev.Init.Version)}
	case ev.Retry != nil:
		status := "network"
		if ev.Retry.ErrorStatus != nil {
			status = fmt.Sprint(*ev.Retry.ErrorStatus)
		}
		return []string{fmt.Sprintf("↻ API error %s (%s): retry %d/%d in %s", status, text.Shorten(redact.String(ev.Retry.Error), 120),
			ev.Retry.Attempt, ev.Retry.MaxRetries, Duration(time.Duration(ev.Retry.RetryDelayMS)*time.Millisecond))}
	case ev.Result != nil:
		return []string{resultLine(ev.Result)}
	case ev.Message != nil && (ev.Type == claude.TypeAssistant || ev.Type == claude.TypeUser):
		return messageLines(ev, worktree, decided)
	case ev.Type == claude.TypeInvalid:
		return []string{"(a line that is not JSON)"}
	}
	return nil
}

func resultLine(r *claude.Result) string {
	status := "✓ result"
	if r.IsError {
		status = "✗ result: " + r.Subtype
	}
	line := fmt.Sprintf("%s · $%.4f · %s · %s", status, r.TotalCostUSD, plural(r.NumTurns, "turn"), Duration(time.Duration(r.DurationMS)*time.Millisecond))
	if len(r.PermissionDenials) > 0 {
		line += fmt.Sprintf(" · %d permission denials", len(r.PermissionDenials))
	}
	if len(r.Errors) > 0 {
		line += " — " + text.Shorten(redact.String(strings.Join(r.Errors, "; ")), 200)
	}
	return line
}

// messageLines are an assistant's text and tool calls, or a user message's
// tool results; a subagent's lines are indented.
func messageLines(ev claude.Event, worktree string, decided Decisions) []string {
	indent := ""
	if ev.ParentToolUseID != "" {
		indent = "    "
	}
	var out []string
	for _, b := range ev.Message.Content {
		switch {
		case b.Type == "text" && ev.Type == claude.TypeAssistant:
			for _, l := range strings.Split(strings.TrimSpace(b.Text), "\n") {
				out = append(out, indent+l)
			}
		case b.Type == "tool_use":
			call := toolLineOf(b.Name, redact.String(policy.Summarize(b.Name, b.Input, 200)), worktree)
			out = append(out, indent+"→ "+call)
		case b.Type == "tool_result":
			mark := "←"
			if d := decisionOf(decided, b.ToolUseID); d != "" {
				mark += " [" + d + "]"
			}
			if b.IsError {
				mark += " error:"
			}
			out = append(out, indent+"  "+mark+" "+text.Shorten(redact.String(blockText(b.Content)), resultMax))
		}
	}
	return out
}

func decisionOf(decided Decisions, toolUseID string) string {
	if decided == nil || toolUseID == "" {
		return ""
	}
	return decided(toolUseID)
}

// AuditDecision reads one line of a job's audit.jsonl: the tool call's id
// and pneuma's decision on it as StreamLines shows it ("allow: Read",
// "deny: Bash(git push*)", "allow, input edited"). ok is false for a line
// that is not an audit entry, and for a call pneuma did not decide.
func AuditDecision(line []byte) (toolUseID, decision string, ok bool) {
	var e struct {
		ToolUseID string `json:"tool_use_id"`
		Decision  string `json:"decision"`
		Rule      string `json:"rule"`
		Edited    bool   `json:"edited"`
	}
	// "cli": pneuma did not decide, the CLI's permission mode did.
	if json.Unmarshal(line, &e) != nil || e.ToolUseID == "" || e.Decision == "" || e.Decision == "cli" {
		return "", "", false
	}
	d := e.Decision
	if e.Rule != "" {
		d += ": " + text.Shorten(redact.String(e.Rule), 80)
	}
	if e.Edited {
		d += ", input edited"
	}
	return e.ToolUseID, d, true
}

func toolLineOf(name, input, worktree string) string {
	return toolLine(runnerToolCall(name, input), worktree)
}

// blockText is a tool_result's content as text (a string or text blocks).
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, " ")
}

func runnerToolCall(name, input string) runner.ToolCall {
	return runner.ToolCall{Name: name, Input: input}
}
