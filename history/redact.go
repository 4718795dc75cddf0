package history

import (
	"bytes"
	"encoding/json"

	"github.com/pneuma-cli/pneuma/internal/redact"
)

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
		out, _ := json.Marshal(redact.String(string(raw)))
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
		return redact.String(x)
	case []any:
		for i := range x {
			x[i] = redactValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if _, ok := val.(string); ok && secretKey(k) {
				val = redact.Marker
			}
			out[redact.String(k)] = redactValue(val)
		}
		return out
	}
	return v
}

// secretKey reports whether a JSON key names a secret ("api_key",
// "password"). Its string value is hidden whole: redacted on its own, apart
// from its key, it looks like any other string.
func secretKey(k string) bool {
	pair := `{"` + k + `": "x"}`
	return redact.String(pair) != pair
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
