package jobfile

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

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
