package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// Problem is one thing wrong with a request body, at a field path.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// DecodeError lists every problem of a request body (mirrors
// jobfile.DecodeError's session form; to be replaced at merge).
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

// DecodeSessionSpec decodes a create-session request with runner's strict
// decoder (the jobs file's checks) and names each problem's field path.
func DecodeSessionSpec(data []byte) (*SessionSpec, error) {
	spec, err := jobfile.DecodeSession(data)
	var de *jobfile.DecodeError
	if errors.As(err, &de) {
		return nil, &DecodeError{Problems: problemsOf(de)}
	}
	return spec, err
}

// problemsOf turns runner's positioned problems into field-path problems.
func problemsOf(de *jobfile.DecodeError) []Problem {
	out := make([]Problem, 0, len(de.Problems))
	for _, p := range de.Problems {
		field := p.Pos.Path
		if field == "" {
			field = p.Pos.String()
		}
		out = append(out, Problem{Field: field, Message: p.Msg})
	}
	return out
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
