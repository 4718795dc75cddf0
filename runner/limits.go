package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/report"
)

// LimitsSpec is the jobs file's limits: block: how a run treats the
// account's usage limits (subscription auth, where the CLI reports them).
type LimitsSpec struct {
	// Wait makes a run that hits a usage limit wait for its reset and then
	// continue the held jobs in their sessions (default true).
	Wait *bool `yaml:"wait"`
	// MaxWait bounds that wait (default 6h); a later reset fails the held
	// jobs with reason usage_limit.
	MaxWait Duration `yaml:"max_wait"`
	// ReserveUtilization, when above 0, keeps the rest of the quota for
	// people: once a job reports a utilization at or past it, no new job
	// starts.
	ReserveUtilization float64 `yaml:"reserve_utilization"`
}

// DefaultMaxWait is limits.max_wait when the jobs file sets none.
const DefaultMaxWait = 6 * time.Hour

// Limits are a plan's usage-limit settings, defaults applied.
type Limits struct {
	Wait               bool          `json:"wait"`
	MaxWait            time.Duration `json:"max_wait"`
	ReserveUtilization float64       `json:"reserve_utilization,omitempty"`
}

// limits applies the defaults to a limits: block.
func (s LimitsSpec) limits() Limits {
	l := Limits{Wait: s.Wait == nil || *s.Wait, MaxWait: s.MaxWait.Std(), ReserveUtilization: s.ReserveUtilization}
	if l.MaxWait <= 0 {
		l.MaxWait = DefaultMaxWait
	}
	return l
}

func (d *decoder) validateLimits(n *yaml.Node, s LimitsSpec) {
	if s.MaxWait < 0 {
		d.errorf(n, "limits.max_wait must not be negative")
	}
	if s.ReserveUtilization < 0 || s.ReserveUtilization > 1 {
		d.errorf(n, "limits.reserve_utilization must be between 0 and 1 (a share of the quota), not %v", s.ReserveUtilization)
	}
}

// ExpectSpec is what a job must show besides a success result; each unmet
// expectation fails it with its own reason.
type ExpectSpec struct {
	// Changes: the job must change at least one file (else no_changes).
	Changes bool `yaml:"changes" json:"changes,omitempty"`
	// NoQuestions: the final answer must not ask the user something (else
	// asked_question).
	NoQuestions bool `yaml:"no_questions" json:"no_questions,omitempty"`
	// MCP: every MCP server must start; one that failed or needs auth stops
	// the job before its first prompt, so before money is spent
	// (mcp_failed; see mcpcheck.go).
	MCP bool `yaml:"mcp" json:"mcp,omitempty"`
}

// SchemaSpec is a job's output_schema as written: a JSON Schema inline (a
// YAML mapping, or a string holding JSON) or the path of a file holding one.
type SchemaSpec string

// UnmarshalYAML takes a mapping as an inline schema and a string as a path
// (or as JSON when it starts with "{").
func (s *SchemaSpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = SchemaSpec(n.Value)
		return nil
	case yaml.MappingNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("output_schema cannot be written as JSON: %w", err)
		}
		*s = SchemaSpec(data)
		return nil
	}
	return fmt.Errorf("output_schema must be a JSON Schema (a mapping) or the path of a file holding one, not %s", kindName(n))
}

// inline reports whether the spec is the schema itself rather than a path.
func (s SchemaSpec) inline() bool { return strings.HasPrefix(strings.TrimSpace(string(s)), "{") }

// usageLimit returns the reset of a usage limit that stopped an attempt:
// the CLI's rate_limit_event said rejected, and the attempt failed on the
// API's 429. ok is false for any other outcome.
func usageLimit(v verdict, rl *claude.RateLimitInfo, res *claude.Result) (reset time.Time, ok bool) {
	if v.status == report.StatusSucceeded || rl == nil || rl.Status != claude.RateLimitRejected {
		return time.Time{}, false
	}
	if res != nil && res.APIErrorStatus != nil && *res.APIErrorStatus != 429 {
		return time.Time{}, false
	}
	if rl.ResetsAt <= 0 {
		return time.Time{}, true
	}
	return time.Unix(rl.ResetsAt, 0), true
}

// holdFor decides how long a run waits for a usage limit's reset: the time
// until reset (zero when it has passed), or ok false when it may not wait
// (waiting is off, the reset is unknown, or it is beyond maxWait).
func holdFor(l Limits, now, reset time.Time) (time.Duration, bool) {
	if !l.Wait || reset.IsZero() {
		return 0, false
	}
	d := max(reset.Sub(now), 0)
	return d, d <= l.MaxWait
}

// pastReserve reports whether a reported utilization leaves less than the
// quota kept for people.
func pastReserve(l Limits, rl *claude.RateLimitInfo) bool {
	return l.ReserveUtilization > 0 && rl != nil && rl.Utilization != nil && *rl.Utilization >= l.ReserveUtilization
}

// reportRateLimit turns the CLI's rate-limit state into the report's.
func reportRateLimit(rl *claude.RateLimitInfo) *report.RateLimit {
	if rl == nil {
		return nil
	}
	out := &report.RateLimit{Status: rl.Status, Type: rl.Type, Utilization: rl.Utilization}
	if rl.ResetsAt > 0 {
		out.ResetsAt = time.Unix(rl.ResetsAt, 0).UTC()
	}
	return out
}

// waitLine is the line a run prints when it waits for a usage limit.
func waitLine(now, reset time.Time, held int) string {
	d := reset.Sub(now).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("usage limit reached; waiting until %s (%s) to resume %d %s",
		reset.Local().Format("15:04"), shortDuration(d), held, plural(held, "job", "jobs"))
}

// shortDuration writes 3h12m, 12m5s or 40s.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
