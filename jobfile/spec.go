package jobfile

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits is the jobs file's limits: block: how a run treats the
// account's usage limits (subscription auth, where the CLI reports them).
type Limits struct {
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

func (d *decoder) validateLimits(n *yaml.Node, s Limits) {
	if s.MaxWait < 0 {
		d.errorf(n, "limits.max_wait must not be negative")
	}
	if s.ReserveUtilization < 0 || s.ReserveUtilization > 1 {
		d.errorf(n, "limits.reserve_utilization must be between 0 and 1 (a share of the quota), not %v", s.ReserveUtilization)
	}
}

// Expect is what a job must show besides a success result; each unmet
// expectation fails it with its own reason.
type Expect struct {
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

// Schema is a job's output_schema as written: a JSON Schema inline (a
// YAML mapping, or a string holding JSON) or the path of a file holding one.
type Schema string

// UnmarshalYAML takes a mapping as an inline schema and a string as a path
// (or as JSON when it starts with "{").
func (s *Schema) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*s = Schema(n.Value)
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
		*s = Schema(data)
		return nil
	}
	return fmt.Errorf("output_schema must be a JSON Schema (a mapping) or the path of a file holding one, not %s", kindName(n))
}

// Inline reports whether the spec is the schema itself rather than a path.
func (s Schema) Inline() bool { return strings.HasPrefix(strings.TrimSpace(string(s)), "{") }
