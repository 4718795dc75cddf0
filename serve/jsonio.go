package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxBody bounds request bodies and WebSocket messages.
const MaxBody = 1 << 20

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the status is sent; a client gone mid-answer has nothing more to hear
}

// apiError is every error body: {"error": "...", "problems": [...]}.
type apiError struct {
	Error    string    `json:"error"`
	Problems []Problem `json:"problems,omitempty"`
}

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...)})
}

// readBody reads a bounded request body; false means it answered already.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", mbe.Limit)
			return nil, false
		}
		writeError(w, http.StatusBadRequest, "read body: %v", err)
		return nil, false
	}
	return data, true
}

// decodeBody decodes a JSON body strictly into dst; an empty body is {}
// when allowEmpty. false means it answered (400 naming the field, 413).
func decodeBody(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) bool {
	data, ok := readBody(w, r)
	if !ok {
		return false
	}
	if len(data) == 0 && allowEmpty {
		return true
	}
	if err := strictUnmarshal(data, dst); err != nil {
		if f, ok := unknownField(err); ok {
			writeJSON(w, http.StatusBadRequest, apiError{Error: fmt.Sprintf("unknown field %q", f), Problems: []Problem{{Field: f, Message: "unknown field"}}})
			return false
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			writeJSON(w, http.StatusBadRequest, apiError{Error: "invalid body", Problems: []Problem{{Field: te.Field, Message: jsonMessage(err)}}})
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid JSON body: %s", jsonMessage(err))
		return false
	}
	return true
}
