package cmd

import (
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// jsonAnnotation marks a command whose output is JSON although its --json
// flag was not given (set from PNEUMA_JSON or a config file); see markJSON.
const jsonAnnotation = "pneuma/json-output"

// markJSON records that c prints JSON, for settings that do not come from
// its flags: an error that ends c is then a JSON event on stdout too.
func markJSON(c *cobra.Command) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[jsonAnnotation] = "true"
}

// jsonOutput reports whether c was asked for JSON on stdout: --json, a
// --format of json (report show), or markJSON.
func jsonOutput(c *cobra.Command) bool {
	if c == nil {
		return false
	}
	if c.Annotations[jsonAnnotation] == "true" {
		return true
	}
	if on, err := c.Flags().GetBool("json"); err == nil && on {
		return true
	}
	format, err := c.Flags().GetString("format")
	return err == nil && format == "json"
}

// errorEvent is how an error that ends a command reads under --json: the
// last line on stdout, so a reader of JSON lines learns why and with which
// exit code the command stopped.
type errorEvent struct {
	Type     string    `json:"type"` // "error"
	Time     time.Time `json:"time"`
	Message  string    `json:"message"`
	ExitCode int       `json:"exit_code"`
}

// writeErrorEvent writes err as one JSON line. A usage error's message is
// its first part only: the usage text is for people and goes to stderr.
func writeErrorEvent(w io.Writer, err error, code int, now time.Time) error {
	msg := err.Error()
	var usage *UsageError
	if errors.As(err, &usage) {
		msg = usage.Err.Error()
	}
	data, jerr := json.Marshal(errorEvent{Type: "error", Time: now, Message: msg, ExitCode: code})
	if jerr != nil {
		return jerr
	}
	_, werr := w.Write(append(data, '\n'))
	return werr
}
