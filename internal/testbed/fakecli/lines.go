package fakecli

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// The builders below produce stdout lines shaped like the samples measured
// on the real CLI 2.1.197 (lists shortened). Pass "{{session}}" as sid to
// let a Scenario fill in the fake's session id.

// InitLine is a system/init line.
func InitLine(sid string) string {
	return line(map[string]any{
		"type": "system", "subtype": "init", "cwd": "/home/me/proj", "session_id": sid,
		"tools": []string{"Task", "Bash", "Edit", "Read", "Write"}, "mcp_servers": []any{},
		"model": "claude-opus-4-8[1m]", "permissionMode": "default", "slash_commands": []string{"verify"},
		"apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": "2.1.197", "output_style": "default",
		"agents": []string{"general-purpose"}, "skills": []string{}, "plugins": []any{},
		"uuid": "78578a82-0000-4000-8000-000000000000", "fast_mode_state": "off",
	})
}

func assistant(sid, msgID string, block map[string]any) string {
	return line(map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": "claude-opus-4-8",
			"content": []any{block}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 100, "cache_creation_input_tokens": 0,
				"cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"},
			"context_management": nil,
		},
		"parent_tool_use_id": nil, "session_id": sid,
		"uuid": "5f0c1a2b-0000-4000-8000-000000000000", "request_id": "req_fake_" + msgID,
	})
}

// AssistantText is an assistant line holding one text block.
func AssistantText(sid, msgID, text string) string {
	return assistant(sid, msgID, map[string]any{"type": "text", "text": text})
}

// ToolUseLine is an assistant line holding one tool_use block; input is
// marshalled as the tool's input object.
func ToolUseLine(sid, msgID, toolUseID, name string, input any) string {
	return assistant(sid, msgID, map[string]any{"type": "tool_use", "id": toolUseID, "name": name, "input": input})
}

// ToolResultLine is a user line holding one tool_result block.
func ToolResultLine(sid, toolUseID, content string, isError bool) string {
	return line(map[string]any{
		"type": "user",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "content": content, "is_error": isError, "tool_use_id": toolUseID,
		}}},
		"parent_tool_use_id": nil, "session_id": sid, "uuid": "6a1b2c3d-0000-4000-8000-000000000000",
		"timestamp": "2026-11-22T12:04:15.667Z", "tool_use_result": content,
	})
}

// CanUseToolLine is a can_use_tool control request for a tool call.
func CanUseToolLine(requestID, toolName, toolUseID string, input any) string {
	return line(map[string]any{
		"type": "control_request", "request_id": requestID,
		"request": map[string]any{
			"subtype": "can_use_tool", "tool_name": toolName, "display_name": toolName,
			"input": input, "permission_suggestions": []any{}, "tool_use_id": toolUseID,
		},
	})
}

// ResultOpts shapes a result line. The zero value is a success.
type ResultOpts struct {
	Subtype        string // "success" if empty
	IsError        bool
	APIErrorStatus *int
	CostUSD        float64
	NumTurns       int
	Text           string // the "result" field
	Usage          Usage
	Model          string // modelUsage key ("claude-opus-4-8[1m]" if empty)
	Errors         []string
	TerminalReason string // "completed" for a success if empty
	Denials        []Denial
}

// Usage is token usage for ResultOpts.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Denial is one permission_denials entry.
type Denial struct {
	ToolName, ToolUseID string
	ToolInput           map[string]any
}

// ResultLine is a result line.
func ResultLine(sid string, o ResultOpts) string {
	if o.Subtype == "" {
		o.Subtype = "success"
	}
	if o.Model == "" {
		o.Model = "claude-opus-4-8[1m]"
	}
	denials := []any{}
	for _, d := range o.Denials {
		denials = append(denials, map[string]any{"tool_name": d.ToolName, "tool_use_id": d.ToolUseID, "tool_input": d.ToolInput})
	}
	r := map[string]any{
		"type": "result", "subtype": o.Subtype, "is_error": o.IsError, "api_error_status": o.APIErrorStatus,
		"duration_ms": 740, "duration_api_ms": 139, "ttft_ms": 723, "num_turns": o.NumTurns,
		"result": o.Text, "stop_reason": "end_turn", "session_id": sid, "total_cost_usd": o.CostUSD,
		"usage": map[string]any{
			"input_tokens": o.Usage.Input, "cache_creation_input_tokens": o.Usage.CacheWrite,
			"cache_read_input_tokens": o.Usage.CacheRead, "output_tokens": o.Usage.Output,
			"server_tool_use": map[string]any{"web_search_requests": 0, "web_fetch_requests": 0},
			"service_tier":    "standard",
		},
		"modelUsage": map[string]any{o.Model: map[string]any{
			"inputTokens": o.Usage.Input, "outputTokens": o.Usage.Output, "cacheReadInputTokens": o.Usage.CacheRead,
			"cacheCreationInputTokens": o.Usage.CacheWrite, "webSearchRequests": 0, "costUSD": o.CostUSD,
			"contextWindow": 1000000, "maxOutputTokens": 64000,
		}},
		"permission_denials": denials, "fast_mode_state": "off", "uuid": "9e8d7c6b-0000-4000-8000-000000000000",
	}
	if o.IsError {
		r["stop_reason"] = nil
		if len(o.Errors) > 0 {
			r["errors"] = o.Errors
		}
	}
	switch {
	case o.TerminalReason != "":
		r["terminal_reason"] = o.TerminalReason
	case !o.IsError:
		r["terminal_reason"] = "completed"
	}
	return line(r)
}

// APIRetryLine is a system/api_retry line; status 0 gives "error_status":null.
func APIRetryLine(sid string, attempt, maxRetries int, delayMS float64, status int, errName string) string {
	var st any
	if status != 0 {
		st = status
	}
	return line(map[string]any{
		"type": "system", "subtype": "api_retry", "attempt": attempt, "max_retries": maxRetries,
		"retry_delay_ms": delayMS, "error_status": st, "error": errName, "session_id": sid,
		"uuid": "1d2e3f4a-0000-4000-8000-000000000000",
	})
}

// bigLine is a valid assistant text line of exactly n bytes (or the
// smallest possible when n is too small).
func bigLine(sid string, n int) string {
	head := `{"type":"assistant","message":{"id":"msg_fake_big","type":"message","role":"assistant","content":[{"type":"text","text":"`
	tail := `"}]},"parent_tool_use_id":null,"session_id":` + quote(sid) + `}`
	pad := max(n-len(head)-len(tail), 0)
	return head + strings.Repeat("x", pad) + tail
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// line marshals v; map keys come out sorted, which the CLI's readers do
// not care about.
func line(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakecli: " + err.Error()) // only fixed shapes are marshalled
	}
	return string(b)
}

// Alive reports whether process pid still runs (a zombie counts as gone).
// It waits up to two seconds for a dying process to go, so tests that
// check "nothing outlived the job" do not race the kernel's reaping.
// Prefer poll.Gone: without /proc Alive reports every process gone, while
// Gone fails the test.
func Alive(pid int) bool {
	return !poll.Until(2*time.Second, func() bool { return !poll.Running(pid) })
}
