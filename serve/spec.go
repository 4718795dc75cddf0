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

// problemsOf turns the jobs-file package's positioned problems into the
// API's: a request's problems name their field path, a jobs file's their
// file:line:col.
func problemsOf(de *jobfile.DecodeError) []Problem {
	out := make([]Problem, 0, len(de.Problems))
	for _, p := range de.Problems {
		out = append(out, Problem{Field: p.Pos.String(), Message: p.Msg})
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
