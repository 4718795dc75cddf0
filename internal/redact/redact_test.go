package redact

import (
	"fmt"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plain text, nothing secret: go test ./...", "plain text, nothing secret: go test ./..."},
		{"key sk-ant-api03-AbCdEf_123-xyz0123456789 end", "key [REDACTED] end"},
		{"key sk-ant-api03-AbC_dEf-0123456789", "key [REDACTED]"},
		{"OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz", "OPENAI [REDACTED]"},
		{"openai sk-proj-abcdefghijklmnopqrstuvwx", "openai [REDACTED]"},
		{"task-abcdefghijklmnopqrstuvwxyz", "task-abcdefghijklmnopqrstuvwxyz"},
		{"git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x", "git clone https://[REDACTED]@github.com/x"},
		{"gho_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123 and github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED] and [REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE ok", "aws [REDACTED] ok"},
		{"AKIAIOSFODNN7EXAMPLE", "[REDACTED]"},
		{"slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"},
		{"curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc' x", "curl -H 'Authorization: Bearer [REDACTED]' x"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "Authorization: Bearer [REDACTED]"},
		{"send BEARER abcdefgh12345678.", "send BEARER [REDACTED]."},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\ncut off", "[REDACTED]"},
		{"API_KEY=abc123 go test", "API_KEY=[REDACTED] go test"},
		{"export GITHUB_TOKEN='a b c'; x", "export GITHUB_TOKEN=[REDACTED]; x"},
		{`DB_PASSWORD="p@ss word" ./run`, "DB_PASSWORD=[REDACTED] ./run"},
		{"export OPENAI_API_KEY=abc123 GH_TOKEN='xyz' DB_PASSWORD=\"p w\"", "export OPENAI_API_KEY=[REDACTED] GH_TOKEN=[REDACTED] DB_PASSWORD=[REDACTED]"},
		{"API_KEY = abc123", "API_KEY = [REDACTED]"},
		{"password=hunter2", "password=[REDACTED]"},
		{"ANTHROPIC_API_KEY=sk-test is a placeholder", "ANTHROPIC_API_KEY=[REDACTED] is a placeholder"},
		{"task-abcdefghijklmnopqrstuvwxyz and a_key = value", "task-abcdefghijklmnopqrstuvwxyz and a_key = value"},
		{"client_secret=s3cr3t&x=1", "client_secret=[REDACTED]&x=1"},
		{`{"api_key": "abc", "name": "x"}`, `{"api_key": "[REDACTED]", "name": "x"}`},
		{"{\n  \"api_key\":\n    \"abc\"\n}", "{\n  \"api_key\":\n    \"[REDACTED]\"\n}"},
		{`{"Password":"a\"b"}`, `{"Password":"[REDACTED]"}`},
		{"x-api-key: abc123", "x-api-key: [REDACTED]"},
		{`{"body":"{\"token\": \"abc\", \"n\": 1}"}`, `{"body":"{\"token\": \"[REDACTED]\", \"n\": 1}"}`},
		{"mysql --password hunter2 db", "mysql --password [REDACTED] db"},
		{"tool --token=abc", "tool --token=[REDACTED]"},
		{"postgres://user:hunter2@db:5432/x", "postgres://user:[REDACTED]@db:5432/x"},
		{"ApiKey=x TOKEN=y Secret=z", "ApiKey=[REDACTED] TOKEN=[REDACTED] Secret=[REDACTED]"},
		{"max_tokens: 4096, MAX_TOKENS=4096, --max-tokens 10", "max_tokens: 4096, MAX_TOKENS=4096, --max-tokens 10"},
		{"<usage>subagent_tokens: 1200", "<usage>subagent_tokens: 1200"},
		{"x_token: abc refresh-tokens_file=f", "x_token: [REDACTED] refresh-tokens_file=[REDACTED]"},
		{"", ""},
	}
	for _, tt := range tests {
		got := String(tt.in)
		if got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := String(got); again != got {
			t.Errorf("String not idempotent on %q: %q", got, again)
		}
		checkBound(t, tt.in, got)
		if whole := wholeText(tt.in); got != whole {
			t.Errorf("String(%q) = %q, but %q on the whole text", tt.in, got, whole)
		}
	}
}

// TestStringLarge checks that secrets are found anywhere in a large text,
// however far from each other, and that the text between them is kept.
func TestStringLarge(t *testing.T) {
	clean := toolOutput(1<<20, false)
	in := "TOKEN=abc\n" + clean + "key sk-ant-api03-AbCdEf_123-xyz0123456789\n" + clean + `{"password": "x"}`
	want := "TOKEN=[REDACTED]\n" + clean + "key [REDACTED]\n" + clean + `{"password": "[REDACTED]"}`
	if got := String(in); got != want {
		t.Errorf("String of %d bytes with three secrets: got %d bytes, want %d", len(in), len(got), len(want))
	}
	if got := String(clean); got != clean {
		t.Errorf("String changed %d bytes without secrets", len(clean))
	}
}

// checkBound asserts that out holds no more than in plus its markers.
func checkBound(t *testing.T, in, out string) {
	t.Helper()
	if n := strings.Count(out, Marker); len(out) > len(in)+n*len(Marker) {
		t.Errorf("String(%q) = %q grew by more than its %d markers", in, out, n)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"API_KEY=x", "sk-ant-aaaaaaaaaaaa", `{"token":"a"}`, "Bearer abcdefghijk", "-----BEGIN PRIVATE KEY-----", "a://b:c@d", "--password x", "key: [REDACTED]]", "TOKEN=[REDACTED", "A_KEY = [REDACTED],x", "secret=\n\"a\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		if again := String(out); again != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, out, again)
		}
		checkBound(t, s, out)
		if len(s) < maxBack {
			if want := wholeText(s); out != want {
				t.Fatalf("windows missed a match: %q -> %q, on the whole text %q", s, out, want)
			}
		}
		sec := Secrets(s)
		if again := Secrets(sec); again != sec {
			t.Fatalf("Secrets not idempotent: %q -> %q -> %q", s, sec, again)
		}
		checkBound(t, s, sec)
		if len(s) < maxBack {
			if want := wholeTextMode(s, true); sec != want {
				t.Fatalf("Secrets' windows missed a match: %q -> %q, on the whole text %q", s, sec, want)
			}
		}
	})
}

// wholeText is String without hints and windows: every rule runs on the
// whole text. On texts shorter than the window bounds it must agree with
// String.
func wholeText(s string) string { return wholeTextMode(s, false) }

func wholeTextMode(s string, precise bool) string {
	for range maxPasses {
		prev := s
		for _, g := range groups {
			s = g.replace(s, precise)
		}
		if s == prev {
			break
		}
	}
	return s
}

// toolOutput is about size bytes of what a tool prints in a coding session:
// test output, code and log lines. With secrets, a few tokens and
// credentials are spread through it.
func toolOutput(size int, secrets bool) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "=== RUN   TestParse/case_%d\n", i)
		fmt.Fprintf(&b, "    parse_test.go:%d: got map[name:x value:%d], want map[name:x value:%d]\n", i%500, i, i+1)
		fmt.Fprintf(&b, "--- PASS: TestParse/case_%d (0.00s)\n", i)
		b.WriteString("\tfor k, v := range m { if v.Kind == lexer.Ident { out = append(out, v.Text) } }\n")
		b.WriteString("2026-11-22T14:31:07Z INFO request handled method=GET path=/api/v1/items status=200 dur=1.2ms\n")
		if secrets && i%20000 == 19999 {
			fmt.Fprintf(&b, "export GITHUB_TOKEN=ghp_%032d\ncurl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.%d' https://api\n", i, i)
		}
	}
	return b.String()
}

func benchmarkString(b *testing.B, secrets bool) {
	s := toolOutput(5<<20, secrets)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		String(s)
	}
}

// BenchmarkStringClean is a 5 MB tool output without secrets.
func BenchmarkStringClean(b *testing.B) { benchmarkString(b, false) }

// BenchmarkStringSecrets is a 5 MB tool output with a few secrets.
func BenchmarkStringSecrets(b *testing.B) { benchmarkString(b, true) }

// codeOutput is about size bytes of source code that names keys, tokens and
// secrets on many lines but holds none, the worst case for the hints.
func codeOutput(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "func (l *lexer) next%d(key string) (Token, error) {\n", i)
		b.WriteString("\tfor i, tok := range l.tokens {\n\t\tif tok.Key == key && tok.Kind != KindSecret {\n")
		b.WriteString("\t\t\treturn tok, nil\n\t\t}\n\t}\n\treturn Token{}, fmt.Errorf(\"no token for key %q\", key)\n}\n\n")
	}
	return b.String()
}

// BenchmarkStringCode is 5 MB of code that mentions keys and tokens on
// most lines.
func BenchmarkStringCode(b *testing.B) {
	s := codeOutput(5 << 20)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		String(s)
	}
}
