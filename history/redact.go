package history

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Redacted replaces every secret in exports.
const Redacted = "[REDACTED]"

// secretPattern is a secret exports never show, with a cheap literal test
// that must pass before the regular expression runs (regexps are slow on
// multi-MB tool output; strings.Contains is not).
type secretPattern struct {
	re   *regexp.Regexp
	hint []string // any of these substrings must occur
	keep bool     // the first group is kept ("Bearer ", "API_KEY=")
}

var secretPatterns = []secretPattern{
	{re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)`), hint: []string{"PRIVATE KEY"}},
	{re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{8,}`), hint: []string{"sk-ant-"}},
	{re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}`), hint: []string{"sk-"}},
	{re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`), hint: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), hint: []string{"github_pat_"}},
	{re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), hint: []string{"AKIA", "ASIA"}},
	{re: regexp.MustCompile(`((?i:\bbearer)\s+)[A-Za-z0-9\-._~+/]{7,}[A-Za-z0-9\-_~+/]=*`), hint: []string{"earer", "EARER"}, keep: true},
	{re: regexp.MustCompile(`(\b[A-Za-z0-9_]*(?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|(?i:password)|(?i:passwd)|(?i:secret))\s*=\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s"'&;` + "`" + `]+)`),
		hint: []string{"_KEY", "_TOKEN", "ECRET", "ecret", "ASSW", "assw"}, keep: true},
}

// Redact returns s with secrets replaced by [REDACTED].
func Redact(s string) string {
	if len(s) < 8 {
		return s
	}
	for _, p := range secretPatterns {
		if !containsAny(s, p.hint) {
			continue
		}
		if p.keep {
			s = p.re.ReplaceAllString(s, "${1}"+Redacted)
		} else {
			s = p.re.ReplaceAllLiteralString(s, Redacted)
		}
	}
	return s
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// redactJSON redacts every string inside a JSON value, keys included, and
// returns it re-encoded. Invalid JSON is returned as a redacted JSON string.
func redactJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out, _ := json.Marshal(Redact(string(raw)))
		return out
	}
	out, err := marshalNoEscape(redactValue(v))
	if err != nil {
		return nil
	}
	return out
}

func redactValue(v any) any {
	switch x := v.(type) {
	case string:
		return Redact(x)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[Redact(k)] = redactValue(val)
		}
		return out
	}
	return v
}

// marshalNoEscape encodes v without HTML escaping and without a trailing newline.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
