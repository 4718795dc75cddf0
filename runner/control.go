package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/policy"
)

// policyHookID names pneuma's PreToolUse hook in the initialize request.
const policyHookID = "pneuma-policy"

// auditInputMax bounds the input summary of one audited call.
const auditInputMax = 300

// Decisions recorded in the audit log.
const (
	decisionAllow = "allow"
	decisionDeny  = "deny"
	// decisionCLI: pneuma did not decide; the CLI's own permission mode did.
	decisionCLI = "cli"
)

// auditEntry is one line of audit.jsonl: one tool call of the main thread or
// of a subagent, with who decided and how it went.
type auditEntry struct {
	Time      time.Time `json:"time"`
	Tool      string    `json:"tool"`
	ToolUseID string    `json:"tool_use_id"`
	// Agent is the Agent tool call a subagent's call belongs to; empty for
	// the main thread.
	Agent    string `json:"agent,omitempty"`
	Input    string `json:"input"`
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
	// Via says where pneuma decided: the PreToolUse hook or a can_use_tool request.
	Via string `json:"via,omitempty"`
	// Edited is true when pneuma allowed the call with an edited input
	// (policy bash_timeout).
	Edited bool `json:"edited,omitempty"`
	// OK is true when the tool ran and returned no error; nil when no result came.
	OK    *bool  `json:"ok"`
	Error string `json:"error,omitempty"`
}

type verdict struct {
	decision, rule, via string
	edited              bool // allowed with an edited input
}

// audit collects a job's tool calls and pneuma's decisions on them and
// writes audit.jsonl. It is called from the event loop and from the
// process's control handler at once.
type audit struct {
	mu       sync.Mutex
	f        *os.File
	pending  map[string]*auditEntry
	order    []string
	verdicts map[string]verdict
	calls    int
	denied   map[string]bool
	writeErr error
	closed   bool
}

func newAudit(path string) (*audit, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	return &audit{f: f, pending: map[string]*auditEntry{}, verdicts: map[string]verdict{}, denied: map[string]bool{}}, nil
}

// decided records pneuma's verdict on a call before the tool runs.
func (a *audit) decided(toolUseID string, v verdict) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.verdicts[toolUseID] = v
	if v.decision == decisionDeny {
		a.denied[toolUseID] = true
	}
	if e, ok := a.pending[toolUseID]; ok {
		e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
	}
}

// event takes the tool_use and tool_result blocks of a stream event.
func (a *audit) event(ev claude.Event) {
	if ev.Message == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range ev.Message.Content {
		switch b.Type {
		case "tool_use":
			if _, seen := a.pending[b.ID]; seen || b.ID == "" {
				continue
			}
			a.calls++
			e := &auditEntry{
				Time: time.Now().UTC(), Tool: b.Name, ToolUseID: b.ID, Agent: ev.ParentToolUseID,
				Input: policy.Summarize(b.Name, b.Input, auditInputMax), Decision: decisionCLI,
			}
			if v, ok := a.verdicts[b.ID]; ok {
				e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
			}
			a.pending[b.ID] = e
			a.order = append(a.order, b.ID)
		case "tool_result":
			e, ok := a.pending[b.ToolUseID]
			if !ok {
				continue
			}
			if v, ok := a.verdicts[b.ToolUseID]; ok {
				e.Decision, e.Rule, e.Via, e.Edited = v.decision, v.rule, v.via, v.edited
			}
			okv := !b.IsError
			e.OK = &okv
			if b.IsError {
				e.Error = redact.String(firstLine(blockText(b.Content), 300))
			}
			a.write(e)
			delete(a.pending, b.ToolUseID)
		}
	}
}

// denial marks a call the CLI's permission system refused (result
// permission_denials), so that it is counted once.
func (a *audit) denial(toolUseID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.denied[toolUseID] = true
}

// counts returns the tool calls seen and how many were refused.
func (a *audit) counts() (calls, denials int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls, len(a.denied)
}

// flush writes the calls that never got a result.
func (a *audit) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range a.order {
		if e, ok := a.pending[id]; ok {
			a.write(e)
			delete(a.pending, id)
		}
	}
	a.order = a.order[:0]
}

func (a *audit) close() error {
	a.flush()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return a.writeErr
	}
	a.closed = true
	if err := a.f.Close(); a.writeErr == nil {
		a.writeErr = err
	}
	return a.writeErr
}

// write appends one entry; the caller holds mu.
func (a *audit) write(e *auditEntry) {
	if a.closed {
		return
	}
	data, err := json.Marshal(e)
	if err == nil {
		_, err = a.f.Write(append(data, '\n'))
	}
	if err != nil && a.writeErr == nil {
		a.writeErr = fmt.Errorf("write audit log: %w", err)
	}
}

// controller answers the CLI's control requests for one job: the policy's
// PreToolUse hook and can_use_tool permission prompts. Every request gets
// exactly one answer.
type controller struct {
	pol   *policy.Policy
	cwd   string
	audit *audit
}

// hookInput is the part of a PreToolUse hook_callback input pneuma reads.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
}

func (c *controller) onControl(_ context.Context, req *claude.ControlRequest) claude.ControlResponse {
	switch req.Subtype {
	case claude.ControlHookCallback:
		if req.CallbackID != policyHookID {
			return claude.HookResult(map[string]any{"continue": true})
		}
		var in hookInput
		if err := json.Unmarshal(req.Input, &in); err != nil || in.ToolName == "" {
			// An input pneuma cannot read is not a reason to let a call through.
			return claude.HookResult(preToolUse("deny", "pneuma could not read this tool call; denied"))
		}
		d := c.pol.Decide(policy.Call{Tool: in.ToolName, Input: in.ToolInput, Cwd: c.cwd})
		switch {
		case !d.Allow:
			c.audit.decided(in.ToolUseID, verdict{decisionDeny, d.Rule, "hook", false})
			return claude.HookResult(preToolUse("deny", d.Message))
		case d.Rule != policy.DefaultRule:
			// An explicit allow rule grants the call, whatever the CLI's mode.
			c.audit.decided(in.ToolUseID, verdict{decisionAllow, d.Rule, "hook", d.UpdatedInput != nil})
			out := preToolUse("allow", "allowed by pneuma policy rule "+d.Rule)
			if d.UpdatedInput != nil {
				out["hookSpecificOutput"].(map[string]any)["updatedInput"] = d.UpdatedInput
			}
			return claude.HookResult(out)
		}
		// Allowed by default: the CLI's own permission mode still applies.
		return claude.HookResult(map[string]any{"continue": true})
	case claude.ControlCanUseTool:
		d := c.pol.Decide(policy.Call{Tool: req.ToolName, Input: req.Input, Cwd: c.cwd})
		if !d.Allow {
			c.audit.decided(req.ToolUseID, verdict{decisionDeny, d.Rule, "can_use_tool", false})
			return claude.Deny(d.Message, false)
		}
		c.audit.decided(req.ToolUseID, verdict{decisionAllow, d.Rule, "can_use_tool", d.UpdatedInput != nil})
		// nil echoes the request's input, which the CLI requires.
		return claude.Allow(d.UpdatedInput)
	}
	return claude.ControlError("pneuma does not handle control requests of subtype " + req.Subtype)
}

func preToolUse(decision, reason string) map[string]any {
	return map[string]any{
		"hookSpecificOutput": map[string]any{
			"hookEventName":            "PreToolUse",
			"permissionDecision":       decision,
			"permissionDecisionReason": reason,
		},
	}
}

// policyHooks is the initialize request that routes every tool call
// through pneuma's PreToolUse hook.
func policyHooks() claude.InitializeRequest {
	return claude.InitializeRequest{Hooks: map[string][]claude.HookMatcher{
		"PreToolUse": {{Matcher: "", HookCallbackIDs: []string{policyHookID}}},
	}}
}

// blockText returns the text of a tool_result's content (a string or blocks).
func blockText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var out string
		for _, b := range blocks {
			out += b.Text
		}
		return out
	}
	return string(raw)
}

func firstLine(s string, n int) string {
	for i, r := range s {
		if r == '\n' {
			s = s[:i]
			break
		}
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
