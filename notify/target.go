// Package notify tells people what happened while nobody watches: a
// permission request waiting in a session, a failed job, a finished run.
// Each target (a URL, a format, the events it wants) has a bounded queue
// and one sender; delivery retries on 5xx answers and transport errors,
// never on 4xx, and never blocks a run or a session: a full queue drops
// and counts. docs/notifications.md describes the targets and payloads.
package notify

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Events a target may ask for.
const (
	EventPermissionRequest = "permission_request"
	EventJobFailed         = "job_failed"
	EventJobSucceeded      = "job_succeeded"
	EventRunFinished       = "run_finished"
	EventUsageLimitHold    = "usage_limit_hold"
	EventSessionIdle       = "session_idle"
	EventBudgetReached     = "budget_reached"
)

// Events is every event, in the order docs/notifications.md lists them.
var Events = []string{EventPermissionRequest, EventJobFailed, EventJobSucceeded, EventRunFinished,
	EventUsageLimitHold, EventSessionIdle, EventBudgetReached}

// Formats of a target's payload.
const (
	FormatJSON  = "json"
	FormatSlack = "slack"
	FormatNtfy  = "ntfy"
)

// Formats is every format.
var Formats = []string{FormatJSON, FormatSlack, FormatNtfy}

// Target is one destination of notifications, as pneuma.yaml and the
// jobs file's notify: list give it.
type Target struct {
	// URL receives a POST per notification (for ntfy, the topic's URL).
	URL string `json:"url" yaml:"url" mapstructure:"url"`
	// Format is json (default), slack or ntfy.
	Format string `json:"format,omitempty" yaml:"format" mapstructure:"format"`
	// Events are the events sent (default: every event).
	Events []string `json:"events,omitempty" yaml:"events" mapstructure:"events"`
	// SecretFile holds the key that signs json payloads (Pneuma-Signature).
	SecretFile string `json:"secret_file,omitempty" yaml:"secret_file" mapstructure:"secret_file"`
}

// minSecret is the shortest signing key accepted.
const minSecret = 16

// Check reports what is wrong with t, one problem a line, each naming the
// field; nil when nothing is.
func (t Target) Check() []string {
	var probs []string
	u, err := url.Parse(t.URL)
	switch {
	case t.URL == "":
		probs = append(probs, "url is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		probs = append(probs, fmt.Sprintf("url %q: not an http or https URL with a host", Name(t.URL)))
	case u.User != nil:
		probs = append(probs, "url: credentials in the URL are not allowed (use secret_file)")
	case t.Format == FormatNtfy && strings.Trim(u.Path, "/") == "":
		probs = append(probs, "url: an ntfy URL ends in its topic (https://ntfy.sh/TOPIC)")
	}
	if t.Format != "" && !slices.Contains(Formats, t.Format) {
		probs = append(probs, fmt.Sprintf("format %q: not one of %s", t.Format, strings.Join(Formats, ", ")))
	}
	for _, e := range t.Events {
		if !slices.Contains(Events, e) {
			probs = append(probs, fmt.Sprintf("events: %q is not one of %s", e, strings.Join(Events, ", ")))
		}
	}
	if t.SecretFile != "" && t.Format != "" && t.Format != FormatJSON {
		probs = append(probs, fmt.Sprintf("secret_file: only the json format is signed, not %s", t.Format))
	}
	return probs
}

// wants says whether t takes event.
func (t Target) wants(event string) bool {
	return len(t.Events) == 0 || slices.Contains(t.Events, event)
}

// format is t's format, json by default.
func (t Target) format() string {
	if t.Format == "" {
		return FormatJSON
	}
	return t.Format
}

// readSecret reads t's signing key: surrounding space trimmed, at least
// minSecret bytes. Errors name the file, never its content.
func (t Target) readSecret(readFile func(string) ([]byte, error)) ([]byte, error) {
	if t.SecretFile == "" {
		return nil, nil
	}
	data, err := readFile(t.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("secret_file: %w", err)
	}
	key := strings.TrimSpace(string(data))
	if len(key) < minSecret {
		return nil, fmt.Errorf("secret_file %s: the key must be at least %d characters", t.SecretFile, minSecret)
	}
	return []byte(key), nil
}

// Name is how logs and errors name a target's URL: its scheme and host
// only, since the path of a Slack webhook or an ntfy topic is a secret.
func Name(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid url)"
	}
	return u.Scheme + "://" + u.Host
}
