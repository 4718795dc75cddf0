package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plain text, nothing secret: go test ./...", "plain text, nothing secret: go test ./..."},
		{"key sk-ant-api03-AbCdEf_123-xyz0123456789 end", "key [REDACTED] end"},
		{"OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz", "OPENAI [REDACTED]"},
		{"task-abcdefghijklmnopqrstuvwxyz", "task-abcdefghijklmnopqrstuvwxyz"},
		{"git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x", "git clone https://[REDACTED]@github.com/x"},
		{"gho_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE ok", "aws [REDACTED] ok"},
		{"slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"},
		{"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc' x", "curl -H 'Authorization: Bearer [REDACTED]' x"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\ncut off", "[REDACTED]"},
		{"API_KEY=abc123 go test", "API_KEY=[REDACTED] go test"},
		{"export GITHUB_TOKEN='a b c'; x", "export GITHUB_TOKEN=[REDACTED]; x"},
		{`DB_PASSWORD="p@ss word" ./run`, "DB_PASSWORD=[REDACTED] ./run"},
		{"client_secret=s3cr3t&x=1", "client_secret=[REDACTED]&x=1"},
		{`{"api_key": "abc", "name": "x"}`, `{"api_key": "[REDACTED]", "name": "x"}`},
		{`{"Password":"a\"b"}`, `{"Password":"[REDACTED]"}`},
		{"x-api-key: abc123", "x-api-key: [REDACTED]"},
		{`{"body":"{\"token\": \"abc\", \"n\": 1}"}`, `{"body":"{\"token\": \"[REDACTED]\", \"n\": 1}"}`},
		{"mysql --password hunter2 db", "mysql --password [REDACTED] db"},
		{"tool --token=abc", "tool --token=[REDACTED]"},
		{"postgres://user:hunter2@db:5432/x", "postgres://user:[REDACTED]@db:5432/x"},
		{"", ""},
	}
	for _, tt := range tests {
		got := Redact(tt.in)
		if got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := Redact(got); again != got {
			t.Errorf("Redact not idempotent on %q: %q", got, again)
		}
		checkBound(t, tt.in, got)
	}
}

// checkBound asserts that out holds no more than in plus its markers.
func checkBound(t *testing.T, in, out string) {
	t.Helper()
	if n := strings.Count(out, Marker); len(out) > len(in)+n*len(Marker) {
		t.Errorf("Redact(%q) = %q grew by more than its %d markers", in, out, n)
	}
}

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

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"API_KEY=x", "sk-ant-aaaaaaaaaaaa", `{"token":"a"}`, "Bearer abcdefghijk", "-----BEGIN PRIVATE KEY-----", "a://b:c@d", "--password x", "key: [REDACTED]]", "TOKEN=[REDACTED"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		if again := Redact(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
		checkBound(t, s, out)
	})
}
