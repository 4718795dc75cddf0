package claude

import (
	"slices"
	"testing"
)

func TestArgs(t *testing.T) {
	base := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	tests := []struct {
		name string
		opts Options
		want []string
	}{
		{"zero", Options{}, nil},
		{"model", Options{Model: "sonnet"}, []string{"--model", "sonnet"}},
		{"permission mode", Options{PermissionMode: "acceptEdits"}, []string{"--permission-mode", "acceptEdits"}},
		{"permission prompt stdio", Options{PermissionPromptStdio: true}, []string{"--permission-prompt-tool", "stdio"}},
		{"allowed tools one flag per rule", Options{AllowedTools: []string{"Write", "Bash(git commit -m:*)"}},
			[]string{"--allowed-tools=Write", "--allowed-tools=Bash(git commit -m:*)"}},
		{"disallowed tools", Options{DisallowedTools: []string{"Bash"}}, []string{"--disallowed-tools=Bash"}},
		{"tools nil", Options{Tools: nil}, nil},
		{"tools empty disables all", Options{Tools: []string{}}, []string{"--tools="}},
		{"tools list", Options{Tools: []string{"Read", "Write"}}, []string{"--tools=Read,Write"}},
		{"max turns", Options{MaxTurns: 12}, []string{"--max-turns", "12"}},
		{"max budget", Options{MaxBudgetUSD: 0.5}, []string{"--max-budget-usd", "0.5"}},
		{"max budget small", Options{MaxBudgetUSD: 0.0001}, []string{"--max-budget-usd", "0.0001"}},
		{"system prompt", Options{SystemPrompt: "-be terse"}, []string{"--system-prompt", "-be terse"}},
		{"append system prompt", Options{AppendSystemPrompt: "also"}, []string{"--append-system-prompt", "also"}},
		{"mcp config", Options{MCPConfig: `{"mcpServers":{}}`}, []string{`--mcp-config={"mcpServers":{}}`}},
		{"settings", Options{Settings: "/etc/s.json"}, []string{"--settings", "/etc/s.json"}},
		{"add dirs", Options{AddDirs: []string{"/a", "/b c"}}, []string{"--add-dir=/a", "--add-dir=/b c"}},
		{"session id", Options{SessionID: "8f0e"}, []string{"--session-id", "8f0e"}},
		{"resume fork", Options{Resume: "8f0e", ForkSession: true}, []string{"--resume", "8f0e", "--fork-session"}},
		{"agents", Options{Agents: `{"rev":{"description":"d","prompt":"p"}}`, Agent: "rev"},
			[]string{"--agents", `{"rev":{"description":"d","prompt":"p"}}`, "--agent", "rev"}},
		{"effort", Options{Effort: "high"}, []string{"--effort", "high"}},
		{"plugin dirs one flag each", Options{PluginDirs: []string{"/p/a", "/p/b c"}}, []string{"--plugin-dir=/p/a", "--plugin-dir=/p/b c"}},
		{"hook events", Options{HookEvents: true}, []string{"--include-hook-events"}},
		{"name", Options{Name: "fix the build"}, []string{"--name", "fix the build"}},
		{"extra args last", Options{Model: "opus", ExtraArgs: []string{"--include-partial-messages"}},
			[]string{"--model", "opus", "--include-partial-messages"}},
		{"all in fixed order", Options{
			Model: "m", PermissionMode: "plan", AllowedTools: []string{"A"}, DisallowedTools: []string{"D"},
			Tools: []string{"T"}, MaxTurns: 3, MaxBudgetUSD: 2, SystemPrompt: "s", AppendSystemPrompt: "a",
			MCPConfig: "mcp.json", Settings: "set.json", AddDirs: []string{"/x"}, SessionID: "sid",
			Resume: "r", ForkSession: true, PermissionPromptStdio: true, ExtraArgs: []string{"--x"},
		}, []string{"--model", "m", "--permission-mode", "plan", "--permission-prompt-tool", "stdio",
			"--allowed-tools=A", "--disallowed-tools=D", "--tools=T", "--max-turns", "3", "--max-budget-usd", "2",
			"--system-prompt", "s", "--append-system-prompt", "a", "--mcp-config=mcp.json", "--settings", "set.json",
			"--add-dir=/x", "--session-id", "sid", "--resume", "r", "--fork-session", "--x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := append(slices.Clone(base), tt.want...)
			if got := tt.opts.Args(); !slices.Equal(got, want) {
				t.Errorf("Args()\n got %q\nwant %q", got, want)
			}
		})
	}
}
