package history

import (
	"bytes"
	"encoding/json"

	"github.com/pneuma-cli/pneuma/internal/redact"
)

// cleanJSON applies clean to every string inside a JSON value, keys
// included, and returns it re-encoded; with redact set, the string value of
// a secret-named key that looks like a secret is hidden whole (on its own it
// looks like any other string). Invalid JSON is returned as a cleaned JSON
// string.
func cleanJSON(raw json.RawMessage, clean func(string) string, redactOn bool) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		out, _ := json.Marshal(clean(string(raw)))
		return out
	}
	out, err := marshalNoEscape(cleanValue(v, clean, redactOn))
	if err != nil {
		return nil
	}
	return out
}

// redactJSON is cleanJSON with redaction and control stripping.
func redactJSON(raw json.RawMessage) json.RawMessage {
	return cleanJSON(raw, cleanText(true), true)
}

func cleanValue(v any, clean func(string) string, redactOn bool) any {
	switch x := v.(type) {
	case string:
		return clean(x)
	case []any:
		for i := range x {
			x[i] = cleanValue(x[i], clean, redactOn)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if s, ok := val.(string); ok && redactOn && redact.IsSecretValue(k, s) {
				val = redact.Marker
			}
			out[clean(k)] = cleanValue(val, clean, redactOn)
		}
		return out
	}
	return v
}

// cleanText returns what exports apply to every text: terminal control
// sequences stripped, then secrets redacted unless redactOn is false.
func cleanText(redactOn bool) func(string) string {
	if !redactOn {
		return stripControls
	}
	return func(s string) string { return redact.Secrets(stripControls(s)) }
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
