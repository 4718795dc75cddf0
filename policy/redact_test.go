package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		tool, input string
		max         int
		want        string
	}{
		{"Bash", `{"command":"go test ./...","description":"x"}`, 80, "Bash: go test ./..."},
		{"Bash", `{"command":"echo a\necho b"}`, 80, `Bash: echo a\necho b`},
		{"Bash", `{"command":"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijkl claude"}`, 80, "Bash: ANTHROPIC_API_KEY=[REDACTED] claude"},
		{"Bash", `{"command":"` + strings.Repeat("x", 100) + `"}`, 20, "Bash: xxxxxxxxxxxxx…"},
		{"Write", `{"file_path":"src/a.go","content":"` + strings.Repeat("x", 1229) + `"}`, 80, "Write: src/a.go (1.2 KB)"},
		{"Write", `{"file_path":"a","content":"hi"}`, 80, "Write: a (2 B)"},
		{"Edit", `{"file_path":"/p/a.go","old_string":"a","new_string":"b"}`, 80, "Edit: /p/a.go"},
		{"MultiEdit", `{"file_path":"a.go","edits":[{},{}]}`, 80, "MultiEdit: a.go (2 edits)"},
		{"Read", `{"file_path":"/p/a.go"}`, 80, "Read: /p/a.go"},
		{"Grep", `{"pattern":"TODO","path":"src"}`, 80, "Grep: TODO in src"},
		{"WebFetch", `{"url":"https://u:pw@x.io/a","prompt":"p"}`, 80, "WebFetch: https://u:[REDACTED]@x.io/a"},
		{"Agent", `{"description":"find bugs","prompt":"...","subagent_type":"explorer"}`, 80, "Agent: find bugs (explorer)"},
		{"mcp__gh__issue", `{"title":"t","token":"abc"}`, 80, `mcp__gh__issue: {"title":"t","token":"[REDACTED]"}`},
		{"Bash", `[1,2]`, 80, "Bash: [1,2]"},
		{"Bash", `{"command":12}`, 80, "Bash"},
		{"Bash", `not json`, 80, "Bash: not json"},
		{"Bash", ``, 80, "Bash"},
	}
	for _, tt := range tests {
		got := Summarize(tt.tool, json.RawMessage(tt.input), tt.max)
		if got != tt.want {
			t.Errorf("Summarize(%s, %s, %d) = %q, want %q", tt.tool, tt.input, tt.max, got, tt.want)
		}
		if tt.max > 0 && utf8.RuneCountInString(got) > tt.max {
			t.Errorf("Summarize = %q, longer than %d runes", got, tt.max)
		}
	}
}

func TestSummarizeHuge(t *testing.T) {
	in := mustJSON(map[string]string{"command": "TOKEN=abc " + strings.Repeat("y ", 1<<20)})
	got := Summarize("Bash", in, 40)
	if got != "Bash: TOKEN=[REDACTED] y y y y y y y y…" {
		t.Errorf("Summarize = %q", got)
	}
}
