package jobfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Session is what a client sets when it opens a server session: the job
// fields of the jobs file that a session honours (sessionJobFields; the
// others are refused, sessionRefused), plus the session's own.
type Session struct {
	// Job holds the job fields (its Name is the session's label).
	Job Job `json:"job"`
	// Resume is a CLI session id to continue; with ForkSession the
	// session continues a copy of it (--fork-session), leaving it as it was.
	Resume      string `json:"resume,omitempty"`
	ForkSession bool   `json:"fork_session,omitempty"`
	// PermissionPrompt "client" sends the permission prompts that the policy
	// and the permission mode leave open to the session's clients.
	PermissionPrompt string `json:"permission_prompt,omitempty"`
	// PermissionTimeout is how long a client has to answer (default 5m);
	// then the call is denied with a message the model reads.
	PermissionTimeout Duration `json:"permission_timeout,omitempty"`
}

// DefaultPermissionTimeout is how long a permission request waits for a client.
const DefaultPermissionTimeout = 5 * time.Minute

// PermissionPromptClient is the permission_prompt that asks a client.
const PermissionPromptClient = "client"

// sessionJobFields are the job fields a session honours as a job does
// (docs/serve.md has the table; timeout and idle_timeout bound each turn).
var sessionJobFields = []string{
	"name", "repo", "base", "worktree", "commit", "model", "permission_mode", "policy", "allowed_tools",
	"disallowed_tools", "tools", "max_turns", "max_budget_usd", "system_prompt", "append_system_prompt",
	"mcp_config", "settings", "add_dirs", "env", "timeout", "idle_timeout", "sandbox",
	"agents", "agent", "effort", "plugin_dirs", "include_hook_events",
}

// sessionRefused are the job fields a session refuses, and why: a field a
// session cannot honour is an error, never ignored.
var sessionRefused = map[string]string{
	"prompt":         "a session takes no prompt: its prompts are the messages sent to it",
	"prompts":        "a session takes no prompts: its prompts are the messages sent to it",
	"prompt_file":    "a session takes no prompt_file: its prompts are the messages sent to it",
	"verify":         "a session does not verify between turns: its client checks a turn's work and sends the next message",
	"retries":        "a session does not retry a turn: a turn cut off ends with turn_end, and the next message resumes the CLI session",
	"expect":         "a session has no end of its own at which to check expectations",
	"output_schema":  "a session's turns are a conversation: --json-schema would force every turn into the schema",
	"push":           "a server session does not publish its branch: push pneuma/session/<id> from the repository",
	"pull_request":   "a server session does not publish its branch: push pneuma/session/<id> from the repository",
	"remote":         "a server session does not publish its branch: push pneuma/session/<id> from the repository",
	"fallback_model": "a session takes no fallback_model",
	"extra_args":     "a server does not pass a client's extra_args to the CLI",
}

// sessionFields are every field of a session request.
var sessionFields = append(append([]string(nil), sessionJobFields...), "resume", "fork_session", "permission_prompt", "permission_timeout")

// DecodeSession decodes a session request (a JSON object) strictly, like
// the jobs file: unknown fields, wrong types and invalid values are all
// reported at once in a *DecodeError whose problems name their field path.
func DecodeSession(data []byte) (*Session, error) {
	d := &decoder{file: "request", paths: map[*yaml.Node]string{}}
	var root yaml.Node
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &DecodeError{Problems: []Problem{{Pos: Pos{Path: "(body)"}, Msg: "the request body is empty; send a JSON object"}}}
	}
	if err := yaml.Unmarshal(data, &root); err != nil || len(root.Content) == 0 {
		return nil, &DecodeError{Problems: []Problem{{Pos: Pos{Path: "(body)"}, Msg: "the request body is not valid JSON"}}}
	}
	doc := root.Content[0]
	notePaths(d.paths, doc, "")
	d.paths[doc] = "(body)"
	if doc.Kind != yaml.MappingNode {
		d.errorf(doc, "a session request must be a JSON object, not %s", kindName(doc))
		return nil, d.err()
	}
	spec := &Session{Job: d.sessionJob(doc)}
	d.sessionOwn(doc, spec)
	d.validateJob(&spec.Job)
	if err := d.err(); err != nil {
		return nil, err
	}
	return spec, nil
}

// sessionJob decodes the job fields of a session request and reports the
// fields a session does not take.
func (d *decoder) sessionJob(doc *yaml.Node) Job {
	job := &yaml.Node{Kind: yaml.MappingNode, Line: doc.Line, Column: doc.Column}
	allowed := map[string]bool{}
	for _, k := range sessionJobFields {
		allowed[k] = true
	}
	own := map[string]bool{"resume": true, "fork_session": true, "permission_prompt": true, "permission_timeout": true}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k := doc.Content[i]
		switch {
		case allowed[k.Value]:
			job.Content = append(job.Content, k, doc.Content[i+1])
		case own[k.Value]:
		case sessionRefused[k.Value] != "":
			d.errorf(k, "%s", sessionRefused[k.Value])
		default:
			d.errorf(k, "unknown field %q%s", k.Value, Suggest(k.Value, sessionFields))
		}
	}
	return d.job(job, false)
}

// sessionOwn decodes the fields only sessions have.
func (d *decoder) sessionOwn(doc *yaml.Node, spec *Session) {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "resume":
			d.scalar(v, &spec.Resume)
		case "fork_session":
			if d.scalar(v, &spec.ForkSession) && spec.ForkSession && strings.TrimSpace(scalarValue(doc, "resume")) == "" {
				d.errorf(v, "fork_session forks the session named by resume; set resume")
			}
		case "permission_prompt":
			if d.scalar(v, &spec.PermissionPrompt) && spec.PermissionPrompt != "" && spec.PermissionPrompt != PermissionPromptClient {
				d.errorf(v, "permission_prompt must be %q or empty, not %q", PermissionPromptClient, spec.PermissionPrompt)
			}
		case "permission_timeout":
			if d.scalar(v, &spec.PermissionTimeout) && spec.PermissionTimeout < 0 {
				d.errorf(v, "permission_timeout must not be negative")
			}
		}
	}
}

// scalarValue is the value of key in mapping m, "" when absent.
func scalarValue(m *yaml.Node, key string) string {
	if v := valueNode(m, key); v != m {
		return v.Value
	}
	return ""
}

// notePaths records the field path of every node under n (keys included).
func notePaths(paths map[*yaml.Node]string, n *yaml.Node, path string) {
	paths[n] = path
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			child := n.Content[i].Value
			if path != "" {
				child = path + "." + child
			}
			paths[n.Content[i]] = child
			notePaths(paths, n.Content[i+1], child)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			notePaths(paths, c, path+"["+strconv.Itoa(i)+"]")
		}
	}
}

// PermissionWait is how long a permission request of the session waits.
func (s *Session) PermissionWait() time.Duration {
	if s.PermissionTimeout > 0 {
		return s.PermissionTimeout.Std()
	}
	return DefaultPermissionTimeout
}

// String names the spec for errors.
func (s *Session) String() string { return fmt.Sprintf("session %q in %s", s.Job.Name, s.Job.Repo) }
