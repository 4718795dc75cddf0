package claude

import (
	"strconv"
	"strings"
)

// Options are the CLI flags pneuma sets. The zero value runs the CLI with
// its own defaults.
type Options struct {
	Model          string
	PermissionMode string // default, acceptEdits, plan, bypassPermissions, dontAsk, auto
	// AllowedTools and DisallowedTools are permission rules such as "Write"
	// or "Bash(git status:*)".
	AllowedTools    []string
	DisallowedTools []string
	// Tools restricts the built-in tool set: nil leaves the flag out, a
	// non-nil empty slice disables every tool (--tools "").
	Tools        []string
	MaxTurns     int     // 0: no limit flag
	MaxBudgetUSD float64 // 0: no limit flag

	SystemPrompt       string
	AppendSystemPrompt string
	// MCPConfig and Settings are a file path or a JSON string.
	MCPConfig string
	Settings  string
	AddDirs   []string

	// SessionID fixes the new session's id (a UUID); Resume continues an
	// existing session, in a new one when ForkSession is set.
	SessionID   string
	Resume      string
	ForkSession bool

	// PermissionPromptStdio routes permission prompts to the client as
	// can_use_tool control requests (--permission-prompt-tool stdio).
	PermissionPromptStdio bool

	// Agents is a JSON object of subagent definitions (--agents); Agent
	// names the agent the session runs as (--agent).
	Agents string
	Agent  string
	// Effort is the session's effort level (--effort: low, medium, high,
	// xhigh, max).
	Effort string
	// PluginDirs load plugins for this session only (--plugin-dir each).
	PluginDirs []string
	// HookEvents writes the hooks' lifecycle lines (hook_started,
	// hook_progress, hook_response) to the stream (--include-hook-events).
	HookEvents bool
	// Name is the session's display name (--name), shown by /resume.
	Name string

	// PartialMessages streams partial deltas as stream_event lines
	// (--include-partial-messages), for clients that show text as it comes.
	PartialMessages bool

	// ExtraArgs are appended last, verbatim.
	ExtraArgs []string
}

// Args returns the CLI arguments for o, always starting with the stream-json
// print mode flags, in a fixed order.
//
// Options whose CLI flag is variadic (--allowed-tools, --disallowed-tools,
// --tools, --add-dir, --mcp-config, --plugin-dir) are written as one "--flag=value"
// argument per value: the attached form never swallows the arguments that
// follow, and a rule holding spaces or commas ("Bash(git commit -m:*)")
// stays one value.
func (o Options) Args() []string {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	str := func(flag, v string) {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	each := func(flag string, vs []string) {
		for _, v := range vs {
			args = append(args, flag+"="+v)
		}
	}
	str("--model", o.Model)
	str("--permission-mode", o.PermissionMode)
	if o.PermissionPromptStdio {
		args = append(args, "--permission-prompt-tool", "stdio")
	}
	each("--allowed-tools", o.AllowedTools)
	each("--disallowed-tools", o.DisallowedTools)
	if o.Tools != nil {
		args = append(args, "--tools="+strings.Join(o.Tools, ","))
	}
	if o.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(o.MaxTurns))
	}
	if o.MaxBudgetUSD > 0 {
		args = append(args, "--max-budget-usd", strconv.FormatFloat(o.MaxBudgetUSD, 'f', -1, 64))
	}
	str("--system-prompt", o.SystemPrompt)
	str("--append-system-prompt", o.AppendSystemPrompt)
	if o.MCPConfig != "" {
		args = append(args, "--mcp-config="+o.MCPConfig)
	}
	str("--settings", o.Settings)
	each("--add-dir", o.AddDirs)
	str("--session-id", o.SessionID)
	str("--resume", o.Resume)
	if o.ForkSession {
		args = append(args, "--fork-session")
	}
	str("--agents", o.Agents)
	str("--agent", o.Agent)
	str("--effort", o.Effort)
	each("--plugin-dir", o.PluginDirs)
	if o.HookEvents {
		args = append(args, "--include-hook-events")
	}
	str("--name", o.Name)
	if o.PartialMessages {
		args = append(args, "--include-partial-messages")
	}
	return append(args, o.ExtraArgs...)
}
