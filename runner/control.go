package runner

import (
	"context"
	"encoding/json"

	"github.com/pneuma-cli/pneuma/claude"
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

// controller answers the CLI's control requests for one job: the policy's
// PreToolUse hook and can_use_tool permission prompts. Every request gets
// exactly one answer.
type controller struct {
	pol   *policy.Policy
	cwd   string
	audit *audit
	// ask decides the permission prompts the policy leaves open (a server
	// session's client); nil allows what the policy allows.
	ask func(context.Context, *claude.ControlRequest) claude.ControlResponse
}

// hookInput is the part of a PreToolUse hook_callback input pneuma reads.
type hookInput struct {
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
}

func (c *controller) onControl(ctx context.Context, req *claude.ControlRequest) claude.ControlResponse {
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
			c.audit.decided(in.ToolUseID, decision{decisionDeny, d.Rule, "hook", false})
			return claude.HookResult(preToolUse("deny", d.Message))
		case d.Rule != policy.DefaultRule:
			// An explicit allow rule grants the call, whatever the CLI's mode.
			c.audit.decided(in.ToolUseID, decision{decisionAllow, d.Rule, "hook", d.UpdatedInput != nil})
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
			c.audit.decided(req.ToolUseID, decision{decisionDeny, d.Rule, "can_use_tool", false})
			return claude.Deny(d.Message, false)
		}
		if d.Rule == policy.DefaultRule && c.ask != nil {
			return c.ask(ctx, req) // the client decides, and its answer is audited there
		}
		c.audit.decided(req.ToolUseID, decision{decisionAllow, d.Rule, "can_use_tool", d.UpdatedInput != nil})
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
