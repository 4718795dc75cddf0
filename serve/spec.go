package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/runner"
)

// Problem is one thing wrong with a request body, at a field path.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// DecodeError lists every problem of a request body (mirrors
// runner.DecodeError's session form; to be replaced at merge).
type DecodeError struct {
	Problems []Problem
}

func (e *DecodeError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return strings.Join(parts, "; ")
}

// DefaultPermissionTimeout is how long a permission request waits for a client.
const DefaultPermissionTimeout = 5 * time.Minute

var permissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

// DecodeSessionSpec decodes a create-session request strictly: unknown
// fields, wrong types and invalid values are all reported at once, each with
// its field path. It mirrors runner.DecodeSessionSpec (to be replaced at merge).
func DecodeSessionSpec(data []byte) (*SessionSpec, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, &DecodeError{Problems: []Problem{{Field: "(body)", Message: "not a JSON object: " + jsonMessage(err)}}}
	}
	spec := &SessionSpec{}
	v := reflect.ValueOf(spec).Elem()
	index := jsonFields(v.Type())
	var probs []Problem
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		i, ok := index[k]
		if !ok {
			field := k
			if field == "" {
				field = `""`
			}
			probs = append(probs, Problem{Field: field, Message: "unknown field" + suggest(k, index)})
			continue
		}
		if err := strictUnmarshal(fields[k], v.Field(i).Addr().Interface()); err != nil {
			probs = append(probs, Problem{Field: fieldPath(k, err), Message: jsonMessage(err)})
		}
	}
	probs = append(probs, validateSpec(spec)...)
	if len(probs) > 0 {
		return nil, &DecodeError{Problems: probs}
	}
	if spec.PermissionTimeout == 0 {
		spec.PermissionTimeout = runner.Duration(DefaultPermissionTimeout)
	}
	return spec, nil
}

// validateSpec checks the values a type cannot.
func validateSpec(s *SessionSpec) []Problem {
	var p []Problem
	bad := func(f, format string, args ...any) {
		p = append(p, Problem{Field: f, Message: fmt.Sprintf(format, args...)})
	}
	if s.PermissionMode != "" && !slices.Contains(permissionModes, s.PermissionMode) {
		bad("permission_mode", "must be one of %s, not %q", strings.Join(permissionModes, ", "), s.PermissionMode)
	}
	if s.PermissionPrompt != "" && s.PermissionPrompt != "client" {
		bad("permission_prompt", `must be "client" or absent, not %q`, s.PermissionPrompt)
	}
	if s.MaxTurns < 0 {
		bad("max_turns", "must not be negative")
	}
	if s.MaxBudgetUSD < 0 {
		bad("max_budget_usd", "must not be negative")
	}
	for f, d := range map[string]runner.Duration{"timeout": s.Timeout, "idle_timeout": s.IdleTimeout, "permission_timeout": s.PermissionTimeout} {
		if d < 0 {
			bad(f, "must not be negative")
		}
	}
	if s.Policy != nil && s.Policy.Default != "" && s.Policy.Default != "allow" && s.Policy.Default != "deny" {
		bad("policy.default", `must be "allow" or "deny", not %q`, s.Policy.Default)
	}
	slices.SortFunc(p, func(a, b Problem) int { return strings.Compare(a.Field, b.Field) })
	return p
}

// jsonFields maps each json name of t's fields to the field's index.
func jsonFields(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

// suggest offers the known name closest to a misspelt one.
func suggest(k string, known map[string]int) string {
	for name := range known {
		if strings.EqualFold(strings.ReplaceAll(name, "_", ""), strings.ReplaceAll(k, "_", "")) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	return ""
}

// strictUnmarshal decodes data into dst, refusing unknown fields and
// anything after the value.
func strictUnmarshal(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// fieldPath extends k with the nested field a decoding error names.
func fieldPath(k string, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return k + "." + te.Field
	}
	if f, ok := unknownField(err); ok {
		return k + "." + f
	}
	return k
}

// unknownField reads the name out of encoding/json's unknown-field error.
func unknownField(err error) (string, bool) {
	const prefix = `json: unknown field "`
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return "", false
	}
	return strings.TrimSuffix(msg[len(prefix):], `"`), true
}

// jsonMessage phrases a decoding error for a client.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("must be %s, not %s", typeName(te.Type), te.Value)
	}
	if _, ok := unknownField(err); ok {
		return "unknown field"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
