// Package jobfile is the jobs file and the server's session spec: their
// types, the strict decoder that reports every problem at file:line:col (or at
// a request's field path), and the defaults a job inherits. runner, serve,
// schema and cmd share it; it reads files and starts no processes.
package jobfile

import (
	"reflect"
	"sort"
	"time"

	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/sandbox"
)

// Version is the only jobs file version this pneuma reads.
const Version = 1

// File is a decoded jobs file.
type File struct {
	// Path is where the file was read from.
	Path        string
	Version     int      `yaml:"version"`
	Concurrency int      `yaml:"concurrency"`
	BudgetUSD   float64  `yaml:"budget_usd"`
	Stagger     Duration `yaml:"stagger"`
	Limits      Limits   `yaml:"limits"`
	Defaults    Job      `yaml:"defaults"`
	Jobs        []Job    `yaml:"jobs"`
	// Notify are the run's notification targets (notify.go).
	Notify []Notify `yaml:"notify"`

	// present records which keys of defaults were written, so that a job's
	// own zero value ("commit: false") is told apart from an absent key.
	defaultsSet map[string]bool
}

// Job is one job as written in the jobs file (before defaults and plan).
type Job struct {
	Name               string            `yaml:"name"`
	Prompt             string            `yaml:"prompt"`
	PromptFile         string            `yaml:"prompt_file"`
	Prompts            []string          `yaml:"prompts"`
	Repo               string            `yaml:"repo"`
	Base               string            `yaml:"base"`
	Model              string            `yaml:"model"`
	PermissionMode     string            `yaml:"permission_mode"`
	AllowedTools       []string          `yaml:"allowed_tools"`
	DisallowedTools    []string          `yaml:"disallowed_tools"`
	Tools              []string          `yaml:"tools"`
	MaxTurns           int               `yaml:"max_turns"`
	MaxBudgetUSD       float64           `yaml:"max_budget_usd"`
	SystemPrompt       string            `yaml:"system_prompt"`
	AppendSystemPrompt string            `yaml:"append_system_prompt"`
	MCPConfig          string            `yaml:"mcp_config"`
	AddDirs            []string          `yaml:"add_dirs"`
	Settings           string            `yaml:"settings"`
	Env                map[string]string `yaml:"env"`
	ExtraArgs          []string          `yaml:"extra_args"`
	Timeout            Duration          `yaml:"timeout"`
	IdleTimeout        Duration          `yaml:"idle_timeout"`
	Worktree           *bool             `yaml:"worktree"`
	Commit             *bool             `yaml:"commit"`
	Retries            int               `yaml:"retries"`
	Verify             *Verify           `yaml:"verify"`
	Policy             *policy.Spec      `yaml:"policy"`
	FallbackModel      string            `yaml:"fallback_model"`
	Expect             *Expect           `yaml:"expect"`
	OutputSchema       Schema            `yaml:"output_schema"`
	PullRequest        *PullRequest      `yaml:"pull_request"`
	Push               *bool             `yaml:"push"`
	Remote             string            `yaml:"remote"`
	Sandbox            *sandbox.Spec     `yaml:"sandbox"`
	// Agents are subagent definitions passed as --agents, by name; Agent
	// names the agent the job runs as (--agent).
	Agents map[string]Agent `yaml:"agents"`
	Agent  string           `yaml:"agent"`
	// Effort is the CLI's effort level (--effort).
	Effort string `yaml:"effort"`
	// PluginDirs load plugins for the job's CLI only (--plugin-dir).
	PluginDirs []string `yaml:"plugin_dirs"`
	// IncludeHookEvents has the CLI write its hooks' lifecycle to the
	// stream (--include-hook-events): counted in the report (hook_runs,
	// hook_failures), hook events, shown in the console.
	IncludeHookEvents bool `yaml:"include_hook_events"`

	// Pos is where the job starts in the file ("jobs.yaml:12:5").
	Pos Pos `yaml:"-"`
	// set records which keys the job wrote.
	set map[string]bool
	// pos records where each key's value is, for errors found after decoding.
	pos map[string]Pos
}

// Verify is a job's verification loop: after the agent's turn pneuma
// runs Command in the job's directory; while it fails, its output goes back
// to the agent as a follow-up prompt in the same session, up to Attempts runs
// of the command in all.
type Verify struct {
	Command  []string `yaml:"command" json:"command"`
	Timeout  Duration `yaml:"timeout" json:"timeout,omitempty"`
	Attempts int      `yaml:"attempts" json:"attempts,omitempty"`
}

const (
	defaultVerifyTimeout  = 10 * time.Minute
	defaultVerifyAttempts = 2
)

// MaxRuns is how many times the command runs at most (attempts, or 2).
func (v *Verify) MaxRuns() int {
	if v.Attempts <= 0 {
		return defaultVerifyAttempts
	}
	return v.Attempts
}

// RunTimeout bounds one run of the command (timeout, or 10m).
func (v *Verify) RunTimeout() time.Duration {
	if v.Timeout <= 0 {
		return defaultVerifyTimeout
	}
	return v.Timeout.Std()
}

// jobFields maps yaml keys to Job field indexes.
var jobFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[Job]()
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("yaml")
		if tag != "" && tag != "-" {
			m[tag] = i
		}
	}
	return m
}()

func jobFieldNames() []string {
	names := make([]string, 0, len(jobFields))
	for k := range jobFields {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// applyDefaults gives j every field it did not set from def. env maps
// are merged into a map of the job's own (the job's entries win);
// everything else is replaced.
func (j *Job) applyDefaults(def *Job) {
	rv := reflect.ValueOf(j).Elem()
	dv := reflect.ValueOf(def).Elem()
	for key, idx := range jobFields {
		if key == "name" || j.set[key] || !def.set[key] {
			continue
		}
		rv.Field(idx).Set(dv.Field(idx))
		j.set[key] = true
		if _, ok := j.pos[key]; !ok {
			j.pos[key] = def.pos[key]
		}
	}
	if j.set["env"] && def.set["env"] {
		merged := make(map[string]string, len(def.Env)+len(j.Env))
		for k, v := range def.Env {
			merged[k] = v
		}
		for k, v := range j.Env {
			merged[k] = v
		}
		j.Env = merged
	}
}

// IsSet reports whether the job (or the defaults it inherited) wrote key.
func (j Job) IsSet(key string) bool { return j.set[key] }

// PosOf returns where key's value was written, or the job's position.
func (j Job) PosOf(key string) Pos {
	if p, ok := j.pos[key]; ok {
		return p
	}
	return j.Pos
}

// Cap gives the job the operator's limits where it set none of its own
// (pneuma serve's client policy): max_turns, max_budget_usd and timeout; a
// zero cap sets nothing. A value the job set is the policy's to refuse.
func (j *Job) Cap(maxTurns int, maxBudgetUSD float64, timeout time.Duration) {
	if j.set == nil {
		j.set = map[string]bool{}
	}
	if maxTurns > 0 && !j.set["max_turns"] {
		j.MaxTurns, j.set["max_turns"] = maxTurns, true
	}
	if maxBudgetUSD > 0 && !j.set["max_budget_usd"] {
		j.MaxBudgetUSD, j.set["max_budget_usd"] = maxBudgetUSD, true
	}
	if timeout > 0 && !j.set["timeout"] {
		j.Timeout, j.set["timeout"] = Duration(timeout), true
	}
}

// ForceSandbox runs the job in pneuma's sandbox whatever it asked (pneuma
// serve's client policy), keeping the paths and hosts it added.
func (j *Job) ForceSandbox() {
	if j.set == nil {
		j.set = map[string]bool{}
	}
	if j.Sandbox == nil {
		j.Sandbox = &sandbox.Spec{}
	}
	j.Sandbox.Enabled, j.set["sandbox"] = true, true
}

// Agent is one subagent definition of agents, in the CLI's own spelling
// of --agents (camelCase keys), so that a definition from Claude Code's
// documentation is written here unchanged.
type Agent struct {
	Description     string   `yaml:"description" json:"description"`
	Prompt          string   `yaml:"prompt" json:"prompt"`
	Tools           []string `yaml:"tools" json:"tools,omitempty"`
	DisallowedTools []string `yaml:"disallowedTools" json:"disallowedTools,omitempty"`
	Model           string   `yaml:"model" json:"model,omitempty"`
	Skills          []string `yaml:"skills" json:"skills,omitempty"`
	MaxTurns        int      `yaml:"maxTurns" json:"maxTurns,omitempty"`
	Background      bool     `yaml:"background" json:"background,omitempty"`
	Effort          string   `yaml:"effort" json:"effort,omitempty"`
	PermissionMode  string   `yaml:"permissionMode" json:"permissionMode,omitempty"`
	InitialPrompt   string   `yaml:"initialPrompt" json:"initialPrompt,omitempty"`
	Memory          string   `yaml:"memory" json:"memory,omitempty"`
}
