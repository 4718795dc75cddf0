package jobfile

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// NotifyFormats and NotifyEvents are the values notify: accepts; the
// notify package's Formats and Events, which a test keeps equal (notify
// imports runner, which imports this package).
var (
	NotifyFormats = []string{"json", "slack", "ntfy"}
	NotifyEvents  = []string{"permission_request", "job_failed", "job_succeeded", "run_finished",
		"usage_limit_hold", "session_idle", "budget_reached"}
)

// Notify is a notification target of the jobs file's notify: list
// (docs/notifications.md). The notify package checks and uses it; the
// decoder only reads it strictly.
type Notify struct {
	URL        string   `yaml:"url" json:"url"`
	Format     string   `yaml:"format" json:"format,omitempty"`
	Events     []string `yaml:"events" json:"events,omitempty"`
	SecretFile string   `yaml:"secret_file" json:"secret_file,omitempty"`
}

// notifyTargets decodes notify: strictly, each target a mapping of the
// known fields with a url.
func (d *decoder) notifyTargets(v *yaml.Node) []Notify {
	if v.Kind != yaml.SequenceNode {
		d.errorf(v, "notify must be a list of targets, not %s", kindName(v))
		return nil
	}
	var out []Notify
	for _, item := range v.Content {
		var t Notify
		if d.scalar(item, &t) {
			d.checkNotify(item, t)
			out = append(out, t)
		}
	}
	return out
}

// checkNotify reports what the schema also refuses: no http(s) url, an
// unknown format or event. The notify package checks the rest at start-up.
func (d *decoder) checkNotify(n *yaml.Node, t Notify) {
	if t.URL == "" {
		d.errorf(n, "a notify target needs a url")
	} else if !strings.HasPrefix(t.URL, "http://") && !strings.HasPrefix(t.URL, "https://") {
		d.errorf(valueNode(n, "url"), "notify url must be an http:// or https:// URL")
	}
	if t.Format != "" && !slices.Contains(NotifyFormats, t.Format) {
		d.errorf(valueNode(n, "format"), "unknown notify format %q (one of %s)", t.Format, strings.Join(NotifyFormats, ", "))
	}
	for _, e := range t.Events {
		if !slices.Contains(NotifyEvents, e) {
			d.errorf(valueNode(n, "events"), "unknown notify event %q%s", e, Suggest(e, NotifyEvents))
		}
	}
}
