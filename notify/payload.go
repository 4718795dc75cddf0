package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/report"
)

// Schema names the json format's payload.
const Schema = "pneuma.notification/v1"

// Bounds of the free text a notification carries.
const (
	inputMax   = 2000
	messageMax = 1000
)

// Notification is one thing to tell: the json format's payload, and what
// the slack and ntfy formats are built from. Text fields are redacted
// before they leave (Notifier.Notify).
type Notification struct {
	Schema string    `json:"schema"`
	Event  string    `json:"event"`
	Time   time.Time `json:"time"`
	// Title and Message are lines for people.
	Title   string `json:"title"`
	Message string `json:"message,omitempty"`
	// RunID and Job name a run's job; Session a server's session.
	RunID   string `json:"run_id,omitempty"`
	Job     string `json:"job,omitempty"`
	Session string `json:"session,omitempty"`
	// Status, Reason and Error say how a job ended (job_failed,
	// job_succeeded) or a session's turn (session_idle).
	Status  string  `json:"status,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Error   string  `json:"error,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Totals are the run's report numbers (run_finished).
	Totals *report.Totals `json:"totals,omitempty"`
	// ResumeAt is when a usage-limit hold ends.
	ResumeAt *time.Time `json:"resume_at,omitempty"`
	// Permission is the request waiting (permission_request).
	Permission *Permission `json:"permission,omitempty"`
	// ConsoleURL opens the run or session in the console, when the server
	// knows its public URL.
	ConsoleURL string `json:"console_url,omitempty"`
}

// Permission is a tool call waiting for a person's decision.
type Permission struct {
	RequestID string `json:"request_id"`
	Tool      string `json:"tool"`
	// Input is the tool's input, redacted and cut to 2000 characters.
	Input string `json:"input"`
	// ApproveURL opens the page that decides this one request without the
	// server's token, until ExpiresAt; empty when the server has no
	// --public-url.
	ApproveURL string     `json:"approve_url,omitempty"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

// redacted returns n with every free text redacted and bounded.
func (n Notification) redacted() Notification {
	n.Schema = Schema
	n.Title = text.Truncate(redact.String(n.Title), 200)
	n.Message = text.Truncate(redact.String(n.Message), messageMax)
	n.Error = text.Truncate(redact.String(n.Error), messageMax)
	if n.Permission != nil {
		p := *n.Permission
		p.Input = text.Truncate(redact.String(p.Input), inputMax)
		n.Permission = &p
	}
	return n
}

// body encodes n in format for a target whose URL is target.
func body(format, target string, n Notification) ([]byte, error) {
	switch format {
	case FormatSlack:
		return json.Marshal(slackMessage(n))
	case FormatNtfy:
		return ntfyMessage(target, n)
	default:
		return json.Marshal(n)
	}
}

// subject names what n is about: the job, the session or the run.
func subject(n Notification) string {
	switch {
	case n.Job != "":
		return "job " + n.Job
	case n.Session != "":
		return "session " + n.Session
	default:
		return "run " + n.RunID
	}
}

// summary is n's text for people: its message, what is asked, the totals.
func summary(n Notification) string {
	var b strings.Builder
	b.WriteString(n.Message)
	if p := n.Permission; p != nil {
		fmt.Fprintf(&b, "\n%s wants to run: %s", p.Tool, text.Truncate(p.Input, 500))
	}
	if t := n.Totals; t != nil {
		fmt.Fprintf(&b, "\n%d jobs: %d succeeded, %d failed, %d skipped, %d interrupted; $%.4f",
			t.Jobs, t.Succeeded, t.Failed, t.Skipped, t.Interrupted, t.CostUSD)
	}
	if n.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", n.Error)
	}
	return strings.TrimSpace(b.String())
}

// links are the buttons of a notification: review the request, open the console.
func links(n Notification) [][2]string {
	var out [][2]string
	if p := n.Permission; p != nil && p.ApproveURL != "" {
		out = append(out, [2]string{"Review and decide", p.ApproveURL})
	}
	if n.ConsoleURL != "" {
		out = append(out, [2]string{"Open console", n.ConsoleURL})
	}
	return out
}

// slackMessage is an incoming-webhook message in Block Kit: a header, the
// summary, context and link buttons (a link button only opens its URL;
// deciding happens on the page).
func slackMessage(n Notification) map[string]any {
	blocks := []any{
		map[string]any{"type": "header", "text": map[string]any{"type": "plain_text", "text": text.Truncate(n.Title, 150)}},
		map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": slackEscape(text.Truncate(summary(n), 2900))}},
		map[string]any{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn",
			"text": slackEscape(fmt.Sprintf("pneuma · %s · %s", n.Event, subject(n)))}}},
	}
	if ls := links(n); len(ls) > 0 {
		var buttons []any
		for i, l := range ls {
			b := map[string]any{"type": "button", "text": map[string]any{"type": "plain_text", "text": l[0]}, "url": l[1]}
			if i == 0 && n.Permission != nil {
				b["style"] = "primary"
			}
			buttons = append(buttons, b)
		}
		blocks = append(blocks, map[string]any{"type": "actions", "elements": buttons})
	}
	return map[string]any{"text": n.Title, "blocks": blocks}
}

// slackEscape escapes the three characters Slack's mrkdwn reserves.
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// ntfyPriority: a person is waiting on a permission request (high); a
// failed job or a hold is worth a look (default+); the rest is news.
func ntfyPriority(event string) int {
	switch event {
	case EventPermissionRequest:
		return 4
	case EventJobFailed, EventUsageLimitHold, EventBudgetReached:
		return 3
	}
	return 2
}

// ntfyMessage is ntfy's JSON publish: POSTed to the server's root with the
// topic in the body, so the target's URL is split into the two.
func ntfyMessage(target string, n Notification) ([]byte, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("ntfy url: %w", err)
	}
	_, topic := ntfySplit(u)
	msg := map[string]any{"topic": topic, "title": n.Title, "message": text.Truncate(summary(n), 4000),
		"priority": ntfyPriority(n.Event), "tags": []string{"pneuma", n.Event}}
	var actions []any
	for _, l := range links(n) {
		actions = append(actions, map[string]any{"action": "view", "label": l[0], "url": l[1]})
	}
	if len(actions) > 0 {
		msg["actions"] = actions
		msg["click"] = links(n)[0][1]
	}
	return json.Marshal(msg)
}

// ntfySplit splits an ntfy topic URL into the server's root (where JSON is
// published) and the topic.
func ntfySplit(u *url.URL) (root, topic string) {
	p := strings.Trim(u.Path, "/")
	i := strings.LastIndex(p, "/")
	topic = p[i+1:]
	r := *u
	r.Path, r.RawPath, r.RawQuery = "/"+p[:max(i, 0)], "", ""
	return r.String(), topic
}

// postURL is where a target's payload is POSTed.
func postURL(t Target) string {
	if t.format() != FormatNtfy {
		return t.URL
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return t.URL
	}
	root, _ := ntfySplit(u)
	return root
}
