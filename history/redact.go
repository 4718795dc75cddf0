package history

import (
	"bytes"
	"encoding/json"
	"regexp"
)

// Redacted replaces every secret in exports.
const Redacted = "[REDACTED]"

// secretPatterns are the secrets exports never show. Groups named "keep" are
// kept so that the text still reads ("Bearer [REDACTED]", "API_KEY=[REDACTED]").
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|$)`),
	regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`(?P<keep>(?i:\bbearer)\s+)[A-Za-z0-9\-._~+/]{7,}[A-Za-z0-9\-_~+/]=*`),
	regexp.MustCompile(`(?P<keep>\b[A-Za-z0-9_]*(?:_KEY|_TOKEN|_SECRET|_PASSWORD|_PASSWD|(?i:password)|(?i:passwd)|(?i:secret))\s*=\s*)(?:"[^"\n]*"|'[^'\n]*'|[^\s"'&;`+"`"+`]+)`),
}

// Redact returns s with secrets replaced by [REDACTED].
func Redact(s string) string {
	if s == "" {
		return s
	}
	for _, re := range secretPatterns {
		if re.NumSubexp() > 0 && re.SubexpNames()[1] == "keep" {
			s = re.ReplaceAllString(s, "${keep}"+Redacted)
			continue
		}
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
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
