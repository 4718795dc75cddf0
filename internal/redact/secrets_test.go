package redact

import "testing"

// TestSecretsLeavesCodeAlone: the examples of issue 16, and more code that
// names keys, tokens and passwords, pass Secrets unchanged.
func TestSecretsLeavesCodeAlone(t *testing.T) {
	for _, in := range []string{
		"sorted(items, key=lambda x: x.name)",
		"const STORAGE_KEY = 'todos'",
		"primary_key: false",
		"{items.map((x, i) => <div key={i}>{x}</div>)}",
		"token_parts: list[str] = []",
		"api_key = os.environ[\"ANTHROPIC_API_KEY\"]",
		"API_KEY=$ANTHROPIC_API_KEY claude -p hi",
		`headers = {"x-api-key": api_key, "Authorization": f"Bearer {token}"}`,
		`{"max_tokens": 4096, "cache_key": "user"}`,
		"password_required: true",
		"GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
		"if tok.Key == key && tok.Kind != KindSecret {",
		"--token-file ./token.txt",
		"uses Bearer authentication over https://user@example.com/x",
		"password=getpass.getpass()",
		"secret: my_secret_name",
		"the key: value pairs below",
	} {
		if got := Secrets(in); got != in {
			t.Errorf("Secrets(%q) = %q, want it unchanged", in, got)
		}
	}
}

// TestSecretsHidesSecrets: real-looking secrets are still redacted.
func TestSecretsHidesSecrets(t *testing.T) {
	tests := []struct{ in, want string }{
		{"key sk-ant-api03-AbCdEf_123-xyz0123456789 end", "key [REDACTED] end"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123", "[REDACTED]"},
		{"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE ok", "aws [REDACTED] ok"},
		{"slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"},
		{"xoxp-1234567890-abcdefghij", "[REDACTED]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----\nafter", "[REDACTED]\nafter"},
		{"API_KEY=abcdef0123456789xyz go", "API_KEY=[REDACTED] go"},
		{`{"api_key": "Zx8Qw3Lp9Rt2Vb7N", "name": "x"}`, `{"api_key": "[REDACTED]", "name": "x"}`},
		{`STRIPE_SECRET = "whsec_4eC39HqLyjWDarjtT1zdp7dc"`, `STRIPE_SECRET = [REDACTED]`},
		{"DB_PASSWORD=hunter2hunter2 ./run", "DB_PASSWORD=[REDACTED] ./run"},
		{"password: s3cr3t!", "password: [REDACTED]"},
		{"postgres://user:hunter2@db:5432/x", "postgres://user:[REDACTED]@db:5432/x"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "Authorization: Bearer [REDACTED]"},
		{`{"body":"{\"token\": \"a1b2c3d4e5f6a7b8c9d0\", \"n\": 1}"}`, `{"body":"{\"token\": \"[REDACTED]\", \"n\": 1}"}`},
		{"mysql --password hunter22 db", "mysql --password [REDACTED] db"},
	}
	for _, tt := range tests {
		got := Secrets(tt.in)
		if got != tt.want {
			t.Errorf("Secrets(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := Secrets(got); again != got {
			t.Errorf("Secrets not idempotent on %q: %q", got, again)
		}
	}
}

func TestIsSecretValue(t *testing.T) {
	tests := []struct {
		name, value string
		want        bool
	}{
		{"api_key", "Zx8Qw3Lp9Rt2Vb7N", true},
		{"api_key", "user", false},
		{"password", "hunter2", true},
		{"password", "false", false},
		{"name", "Zx8Qw3Lp9Rt2Vb7N", false},
		{"max_tokens", "4096", false},
	}
	for _, tt := range tests {
		if got := IsSecretValue(tt.name, tt.value); got != tt.want {
			t.Errorf("IsSecretValue(%q, %q) = %v, want %v", tt.name, tt.value, got, tt.want)
		}
	}
}
