package history

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// contentSession writes a session holding what exports used to lose or
// mangle: system entries, a title, model Markdown with HTML in it, terminal
// escapes, ordinary code that names keys and tokens, and real secrets.
func contentSession(t *testing.T) string {
	t.Helper()
	const sid = "c0000000-0000-4000-8000-000000000000"
	path := filepath.Join(t.TempDir(), "projects", "-home-me-gen", sid+".jsonl")
	code := "sorted(items, key=lambda x: x.name)\nconst STORAGE_KEY = 'todos'\nprimary_key: false\n<div key={i}>\ntoken_parts: list[str] = []"
	md := "Here:\n\n```python\n<script>alert(1)</script>\n```\n\n- **bold** item\n- `inline <b>`\n1. first\n\nSee [the docs](javascript:alert(1)) <img src=x onerror=alert(1)>."
	jsonl(t, path,
		obj{"type": "summary", "summary": "Fixing the \x1b[1mparser\x1b[0m", "leafUuid": "a2"},
		userLine(sid, "u1", "", "Please fix it. My key is sk-ant-api03-AbCdEf_123-xyz0123456789", nil),
		obj{"type": "system", "subtype": "stop_hook_summary", "uuid": "y1", "parentUuid": "u1", "timestamp": "2026-11-20T10:00:00Z",
			"content": "HOOK-OUTPUT: lint passed"},
		obj{"type": "system", "subtype": "informational", "uuid": "y2", "parentUuid": "y1", "timestamp": "2026-11-20T10:00:00Z",
			"content": "Claude Opus limit reached, now using Sonnet"},
		asstLine(sid, "a1", "y2", "msg_1", 5, []obj{textB(md), {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": obj{"command": "cat app.py"}}}, nil),
		userLine(sid, "u2", "a1", []obj{{"type": "tool_result", "tool_use_id": "toolu_1",
			"content": "\x1b[31mred\x1b[0m \x1b]0;title\x07done\r\n" + code + "\nexport GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123\nAWS AKIAIOSFODNN7EXAMPLE"}}, nil),
		asstLine(sid, "a2", "u2", "msg_2", 5, []obj{textB("Done.")}, nil),
	)
	return path
}

func TestExportsKeepSystemEntriesAndTitles(t *testing.T) {
	path := contentSession(t)
	for _, f := range []Format{FormatMarkdown, FormatText, FormatHTML, FormatJSON} {
		out := exportString(t, path, f)
		for _, want := range []string{"Fixing the parser", "HOOK-OUTPUT: lint passed", "limit reached, now using Sonnet"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s export lacks %q", f, want)
			}
		}
	}
}

func TestHTMLRendersModelMarkdownSafely(t *testing.T) {
	out := exportString(t, contentSession(t), FormatHTML)
	for _, bad := range []string{"<script", "<img", "href=", "javascript:alert(1)\"", "onerror=alert(1)>"} {
		if strings.Contains(out, bad) {
			t.Errorf("HTML holds %q", bad)
		}
	}
	for _, want := range []string{
		"<pre><code>&lt;script&gt;alert(1)&lt;/script&gt;\n</code></pre>",
		"<li><strong>bold</strong> item</li>",
		"<li><code>inline &lt;b&gt;</code></li>",
		"<ol>\n<li>first</li>",
		`the docs <span class="url">(javascript:alert(1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

func TestExportsStripTerminalEscapes(t *testing.T) {
	path := contentSession(t)
	for _, f := range []Format{FormatMarkdown, FormatText, FormatHTML, FormatJSON} {
		out := exportString(t, path, f)
		if strings.ContainsAny(out, "\x1b\x07\r") || strings.Contains(out, `\u001b`) || strings.Contains(out, `\u0007`) {
			t.Errorf("%s export carries terminal control characters", f)
		}
		if !strings.Contains(out, "red done") {
			t.Errorf("%s export lost the text around the escapes", f)
		}
	}
}

func TestExportsRedactSecretsNotCode(t *testing.T) {
	path := contentSession(t)
	for _, f := range []Format{FormatMarkdown, FormatText, FormatJSON} {
		out := exportString(t, path, f)
		if f == FormatJSON {
			var doc struct {
				Entries []Record `json:"entries"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, r := range doc.Entries {
				for _, b := range r.Blocks {
					texts = append(texts, b.Text)
				}
			}
			out = strings.Join(texts, "\n")
		}
		for _, line := range []string{"sorted(items, key=lambda x: x.name)", "const STORAGE_KEY = 'todos'", "primary_key: false", "<div key={i}>", "token_parts: list[str] = []"} {
			if !strings.Contains(out, line) {
				t.Errorf("%s export rewrote ordinary code %q", f, line)
			}
		}
		for _, secret := range []string{"sk-ant-api03", "ghp_abcdef", "AKIAIOSFODNN7EXAMPLE"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s export holds the secret %q", f, secret)
			}
		}
	}
	var buf strings.Builder
	if err := Export(t.Context(), &buf, path, ExportOptions{Format: FormatMarkdown, NoRedact: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "ghp_abcdefghijklmnopqrstuvwxyz0123") || strings.Contains(buf.String(), "\x1b") {
		t.Error("NoRedact: the token is hidden, or the escapes are kept")
	}
}
