// Package runner runs a plan of Claude Code jobs: it decodes the jobs file,
// builds the plan, schedules jobs concurrently, drives each job's CLI process
// through its lifecycle (workspace, stream, timeouts, retries, commit, archive)
// and produces the run report. It writes only to the run directory and to the
// interfaces it is given; it never touches os.Stdout.
package runner

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/sandbox"
)

// FileVersion is the only jobs file version this pneuma reads.
const FileVersion = 1

// File is a decoded jobs file.
type File struct {
	// Path is where the file was read from.
	Path        string
	Version     int        `yaml:"version"`
	Concurrency int        `yaml:"concurrency"`
	BudgetUSD   float64    `yaml:"budget_usd"`
	Stagger     Duration   `yaml:"stagger"`
	Limits      LimitsSpec `yaml:"limits"`
	Defaults    JobSpec    `yaml:"defaults"`
	Jobs        []JobSpec  `yaml:"jobs"`

	// present records which keys of defaults were written, so that a job's
	// own zero value ("commit: false") is told apart from an absent key.
	defaultsSet map[string]bool
}

// JobSpec is one job as written in the jobs file (before defaults and plan).
type JobSpec struct {
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
	Verify             *VerifySpec       `yaml:"verify"`
	Policy             *policy.Spec      `yaml:"policy"`
	FallbackModel      string            `yaml:"fallback_model"`
	Expect             *ExpectSpec       `yaml:"expect"`
	OutputSchema       SchemaSpec        `yaml:"output_schema"`
	PullRequest        *PullRequestSpec  `yaml:"pull_request"`
	Push               *bool             `yaml:"push"`
	Remote             string            `yaml:"remote"`
	Sandbox            *sandbox.Spec     `yaml:"sandbox"`
	// Agents are subagent definitions passed as --agents, by name; Agent
	// names the agent the job runs as (--agent).
	Agents map[string]AgentSpec `yaml:"agents"`
	Agent  string               `yaml:"agent"`
	// Effort is the CLI's effort level (--effort).
	Effort string `yaml:"effort"`
	// PluginDirs load plugins for the job's CLI only (--plugin-dir).
	PluginDirs []string `yaml:"plugin_dirs"`
	// IncludeHookEvents has the CLI write its hooks' lifecycle to the
	// stream (--include-hook-events): counted in the report (hook_runs),
	// shown in the console.
	IncludeHookEvents bool `yaml:"include_hook_events"`

	// Pos is where the job starts in the file ("jobs.yaml:12:5").
	Pos Pos `yaml:"-"`
	// set records which keys the job wrote.
	set map[string]bool
	// pos records where each key's value is, for errors found after decoding.
	pos map[string]Pos
}

// VerifySpec is a job's verification loop: after the agent's turn pneuma
// runs Command in the job's directory; while it fails, its output goes back
// to the agent as a follow-up prompt in the same session, up to Attempts runs
// of the command in all.
type VerifySpec struct {
	Command  []string `yaml:"command" json:"command"`
	Timeout  Duration `yaml:"timeout" json:"timeout,omitempty"`
	Attempts int      `yaml:"attempts" json:"attempts,omitempty"`
}

// Duration is a time.Duration written as "90s", "15m" or "1h30m".
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Pos is a position in a file, or in a JSON request, where Path names the
// field ("policy.allow[0]").
type Pos struct {
	File      string
	Line, Col int
	Path      string
}

func (p Pos) String() string {
	switch {
	case p.Path != "":
		return p.Path
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Problem is one thing wrong with a jobs file, at a position.
type Problem struct {
	Pos Pos
	Msg string
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// DecodeError lists every problem found in a jobs file.
type DecodeError struct {
	Problems []Problem
}

func (e *DecodeError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// AgentSpec is one subagent definition of agents, in the CLI's own
// spelling of --agents (camelCase keys), so that a definition from Claude
// Code's documentation is written here unchanged.
type AgentSpec struct {
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

// effortLevels are the values the CLI accepts for --effort.
var effortLevels = []string{"low", "medium", "high", "xhigh", "max"}

// agentMemories are the values of an agent's memory.
var agentMemories = []string{"user", "project", "local"}

// permissionModes are the values the CLI accepts for --permission-mode.
var permissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

// ReadFile reads and decodes the jobs file at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read jobs file: %w", err)
	}
	return Decode(path, data)
}

// Decode decodes a jobs file strictly: unknown keys, wrong types, duplicate
// keys, missing or duplicate names and jobs without a prompt are all reported
// at once, each with file:line:col, in a *DecodeError.
func Decode(path string, data []byte) (*File, error) {
	d := &decoder{file: path}
	f := &File{Path: path}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &DecodeError{Problems: []Problem{yamlSyntaxProblem(path, err)}}
	}
	if len(bytes.TrimSpace(data)) == 0 || root.Kind == 0 || len(root.Content) == 0 {
		return nil, &DecodeError{Problems: []Problem{{Pos: Pos{File: path, Line: 1, Col: 1}, Msg: "jobs file is empty"}}}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		d.errorf(doc, "jobs file must be a mapping with version and jobs, not %s", kindName(doc))
		return nil, d.err()
	}
	var versionSet, versionOK, jobsSet bool
	d.mapping(doc, func(key string, k, v *yaml.Node) {
		switch key {
		case "version":
			versionSet = true
			versionOK = d.scalar(v, &f.Version)
		case "concurrency":
			d.scalar(v, &f.Concurrency)
			if f.Concurrency < 0 {
				d.errorf(v, "concurrency must be 0 (number of CPUs) or more, not %d", f.Concurrency)
			}
		case "budget_usd":
			d.scalar(v, &f.BudgetUSD)
			if f.BudgetUSD < 0 {
				d.errorf(v, "budget_usd must not be negative")
			}
		case "stagger":
			d.scalar(v, &f.Stagger)
		case "limits":
			if d.scalar(v, &f.Limits) {
				d.validateLimits(v, f.Limits)
			}
		case "defaults":
			f.Defaults = d.job(v, true)
			f.defaultsSet = f.Defaults.set
		case "jobs":
			jobsSet = true
			if v.Kind != yaml.SequenceNode {
				d.errorf(v, "jobs must be a list, not %s", kindName(v))
				return
			}
			for _, item := range v.Content {
				f.Jobs = append(f.Jobs, d.job(item, false))
			}
		default:
			d.errorf(k, "unknown field %q%s", key, suggest(key, []string{"version", "concurrency", "budget_usd", "stagger", "limits", "defaults", "jobs"}))
		}
	})
	if !versionSet {
		d.errorf(doc, "missing version (write \"version: %d\" at the top)", FileVersion)
	} else if versionOK && f.Version != FileVersion {
		d.errorf(valueNode(doc, "version"), "unsupported version %d (this pneuma reads version %d)", f.Version, FileVersion)
	}
	if !jobsSet {
		d.errorf(doc, "missing jobs (a list of jobs to run)")
	} else if jobs := valueNode(doc, "jobs"); jobs.Kind == yaml.SequenceNode && len(f.Jobs) == 0 {
		d.errorf(jobs, "jobs is empty")
	}
	d.validate(f)
	if err := d.err(); err != nil {
		return nil, err
	}
	for i := range f.Jobs {
		f.Jobs[i] = f.Jobs[i].withDefaults(f.Defaults)
	}
	return f, nil
}

type decoder struct {
	file     string
	problems []Problem
	// paths names the field of each node, for a request whose problems are
	// reported by field path rather than by line (nil for jobs files).
	paths map[*yaml.Node]string
}

func (d *decoder) pos(n *yaml.Node) Pos {
	return Pos{File: d.file, Line: n.Line, Col: n.Column, Path: d.paths[n]}
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: d.pos(n), Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) errorAt(p Pos, format string, args ...any) {
	d.problems = append(d.problems, Problem{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) err() error {
	if len(d.problems) == 0 {
		return nil
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i].Pos, d.problems[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return &DecodeError{Problems: d.problems}
}

// mapping calls f for each key of a mapping node, reporting duplicate keys and
// non-string keys itself.
func (d *decoder) mapping(n *yaml.Node, f func(key string, k, v *yaml.Node)) {
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "keys must be plain names")
			continue
		}
		if k.Tag == "!!merge" {
			d.errorf(k, "YAML merge keys (<<) are not supported; use defaults")
			continue
		}
		if prev, ok := seen[k.Value]; ok {
			d.errorf(k, "duplicate field %q (first at line %d)", k.Value, prev.Line)
			continue
		}
		seen[k.Value] = k
		f(k.Value, k, v)
	}
}

// scalar decodes v into dst, turning yaml's type errors into positioned
// problems. Mappings decoded into structs are checked for unknown keys first,
// since yaml.Node.Decode has no known-fields mode.
func (d *decoder) scalar(v *yaml.Node, dst any) bool {
	if !d.known(v, reflect.TypeOf(dst).Elem()) {
		return false
	}
	if err := v.Decode(dst); err != nil {
		d.errorf(v, "%s", typeErrorMessage(err, v, dst))
		return false
	}
	return true
}

// known reports unknown and duplicate keys of a mapping bound for a struct
// type (through pointers), recursively. It returns false when it found any.
func (d *decoder) known(n *yaml.Node, t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && n.Kind == yaml.MappingNode {
		// A map of structs (agents): each value is checked as its struct.
		ok := true
		for i := 1; i < len(n.Content); i += 2 {
			ok = d.known(n.Content[i], t.Elem()) && ok
		}
		return ok
	}
	if t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode || t == reflect.TypeFor[Duration]() {
		return true
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			fields[tag] = t.Field(i).Type
			names = append(names, tag)
		}
	}
	ok := true
	d.mapping(n, func(key string, k, v *yaml.Node) {
		ft, found := fields[key]
		if !found {
			d.errorf(k, "unknown field %q%s", key, suggest(key, names))
			ok = false
			return
		}
		if !d.known(v, ft) {
			ok = false
		}
	})
	return ok
}

// jobFields maps yaml keys to JobSpec field indexes.
var jobFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[JobSpec]()
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

// job decodes one job mapping (or the defaults mapping).
func (d *decoder) job(n *yaml.Node, isDefaults bool) JobSpec {
	j := JobSpec{Pos: d.pos(n), set: map[string]bool{}, pos: map[string]Pos{}}
	if n.Kind != yaml.MappingNode {
		what := "a job"
		if isDefaults {
			what = "defaults"
		}
		d.errorf(n, "%s must be a mapping of fields, not %s", what, kindName(n))
		return j
	}
	rv := reflect.ValueOf(&j).Elem()
	d.mapping(n, func(key string, k, v *yaml.Node) {
		idx, ok := jobFields[key]
		if !ok {
			d.errorf(k, "unknown job field %q%s", key, suggest(key, jobFieldNames()))
			return
		}
		if isDefaults && key == "name" {
			d.errorf(k, "defaults cannot set name")
			return
		}
		field := rv.Field(idx)
		if !d.scalar(v, field.Addr().Interface()) {
			return
		}
		j.set[key] = true
		j.pos[key] = d.pos(v)
	})
	return j
}

// validate checks what types alone cannot: names, prompts and value ranges.
func (d *decoder) validate(f *File) {
	d.validateJob(&f.Defaults)
	names := map[string]Pos{}
	for i := range f.Jobs {
		j := &f.Jobs[i]
		if j.set == nil { // not a mapping; already reported
			continue
		}
		if !j.set["name"] || strings.TrimSpace(j.Name) == "" {
			d.errorAt(j.Pos, "job %d has no name", i+1)
		} else if prev, ok := names[j.Name]; ok {
			d.errorAt(j.pos["name"], "duplicate job name %q (first at line %d)", j.Name, prev.Line)
		} else {
			names[j.Name] = j.pos["name"]
		}
		promptSources := 0
		for _, k := range []string{"prompt", "prompt_file", "prompts"} {
			if j.set[k] || f.defaultsSet[k] {
				promptSources++
			}
		}
		switch {
		case promptSources == 0:
			d.errorAt(j.Pos, "job %s has neither prompt nor prompt_file", jobLabel(j, i))
		case j.set["prompt"] && j.set["prompt_file"], j.set["prompt"] && j.set["prompts"], j.set["prompt_file"] && j.set["prompts"]:
			d.errorAt(j.Pos, "job %s sets more than one of prompt, prompt_file and prompts", jobLabel(j, i))
		}
		if j.set["prompt"] && strings.TrimSpace(j.Prompt) == "" {
			d.errorAt(j.pos["prompt"], "prompt is empty")
		}
		if j.set["prompts"] && len(j.Prompts) == 0 {
			d.errorAt(j.pos["prompts"], "prompts is empty")
		}
		d.validateJob(j)
	}
}

func (d *decoder) validateJob(j *JobSpec) {
	if j.set == nil {
		return
	}
	if j.set["permission_mode"] && !contains(permissionModes, j.PermissionMode) {
		d.errorAt(j.pos["permission_mode"], "permission_mode %q is not one of %s", j.PermissionMode, strings.Join(permissionModes, ", "))
	}
	nonNegative := []struct {
		key string
		bad bool
	}{
		{"max_turns", j.MaxTurns < 0},
		{"max_budget_usd", j.MaxBudgetUSD < 0},
		{"retries", j.Retries < 0},
		{"timeout", j.Timeout < 0},
		{"idle_timeout", j.IdleTimeout < 0},
	}
	for _, c := range nonNegative {
		if j.set[c.key] && c.bad {
			d.errorAt(j.pos[c.key], "%s must not be negative", c.key)
		}
	}
	if j.set["verify"] && j.Verify != nil {
		v := j.Verify
		switch {
		case len(v.Command) == 0 || strings.TrimSpace(v.Command[0]) == "":
			d.errorAt(j.pos["verify"], "verify.command must be a non-empty list (argv, no shell), such as [go, test, ./...]")
		case v.Attempts < 0 || v.Attempts > 20:
			d.errorAt(j.pos["verify"], "verify.attempts must be between 1 and 20, not %d", v.Attempts)
		case v.Timeout < 0:
			d.errorAt(j.pos["verify"], "verify.timeout must not be negative")
		}
	}
	if j.set["policy"] && j.Policy != nil {
		if _, errs := policy.Compile(*j.Policy); len(errs) > 0 {
			for _, err := range errs {
				d.errorAt(j.pos["policy"], "%v", err)
			}
		}
	}
	if j.set["retries"] && j.Retries > 10 {
		d.errorAt(j.pos["retries"], "retries must be at most 10, not %d", j.Retries)
	}
	for k := range j.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			d.errorAt(j.pos["env"], "env name %q is not a valid environment variable name", k)
		}
	}
	d.validatePublish(j)
	d.validateAgents(j)
}

// validateAgents checks agents, agent, effort and plugin_dirs.
func (d *decoder) validateAgents(j *JobSpec) {
	if j.set["effort"] && !contains(effortLevels, j.Effort) {
		d.errorAt(j.pos["effort"], "effort %q is not one of %s", j.Effort, strings.Join(effortLevels, ", "))
	}
	if j.set["agent"] && (strings.TrimSpace(j.Agent) == "" || strings.HasPrefix(j.Agent, "-")) {
		d.errorAt(j.pos["agent"], "agent must name an agent, not %q", j.Agent)
	}
	for i, dir := range j.PluginDirs {
		if strings.TrimSpace(dir) == "" {
			d.errorAt(j.pos["plugin_dirs"], "plugin_dirs[%d] is empty", i)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(j.Agents)) {
		a, at := j.Agents[name], j.pos["agents"]
		switch {
		case !agentName.MatchString(name):
			d.errorAt(at, "agents: %q is not an agent name (letters, digits, - and _)", name)
		case strings.TrimSpace(a.Description) == "" || strings.TrimSpace(a.Prompt) == "":
			d.errorAt(at, "agents.%s needs a description and a prompt", name)
		case a.PermissionMode != "" && !contains(permissionModes, a.PermissionMode):
			d.errorAt(at, "agents.%s.permissionMode %q is not one of %s", name, a.PermissionMode, strings.Join(permissionModes, ", "))
		case a.Effort != "" && !contains(effortLevels, a.Effort):
			d.errorAt(at, "agents.%s.effort %q is not one of %s", name, a.Effort, strings.Join(effortLevels, ", "))
		case a.Memory != "" && !contains(agentMemories, a.Memory):
			d.errorAt(at, "agents.%s.memory %q is not one of %s", name, a.Memory, strings.Join(agentMemories, ", "))
		case a.MaxTurns < 0:
			d.errorAt(at, "agents.%s.maxTurns must not be negative", name)
		}
	}
}

// agentName is what the CLI takes as an agent's name.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// withDefaults returns j with every field it did not set taken from def.
// env maps are merged (the job's entries win); everything else is replaced.
func (j JobSpec) withDefaults(def JobSpec) JobSpec {
	out := j
	rv := reflect.ValueOf(&out).Elem()
	dv := reflect.ValueOf(def)
	for key, idx := range jobFields {
		if key == "name" || j.set[key] || !def.set[key] {
			continue
		}
		rv.Field(idx).Set(dv.Field(idx))
		out.set[key] = true
		if _, ok := out.pos[key]; !ok {
			out.pos[key] = def.pos[key]
		}
	}
	if j.set["env"] && def.set["env"] {
		env := make(map[string]string, len(def.Env)+len(j.Env))
		for k, v := range def.Env {
			env[k] = v
		}
		for k, v := range j.Env {
			env[k] = v
		}
		out.Env = env
	}
	return out
}

// IsSet reports whether the job (or the defaults it inherited) wrote key.
func (j JobSpec) IsSet(key string) bool { return j.set[key] }

// PosOf returns where key's value was written, or the job's position.
func (j JobSpec) PosOf(key string) Pos {
	if p, ok := j.pos[key]; ok {
		return p
	}
	return j.Pos
}

// UnmarshalYAML reads a duration such as "90s" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("must be a duration such as 90s or 15m, not %s", kindName(n))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		if _, nerr := strconv.Atoi(n.Value); nerr == nil {
			return fmt.Errorf("duration %q needs a unit, such as %ss", n.Value, n.Value)
		}
		return fmt.Errorf("invalid duration %q (write it like 90s, 15m or 1h30m)", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// MarshalJSON writes the duration as a string ("15m0s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func typeErrorMessage(err error, v *yaml.Node, dst any) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		// yaml's "line N: cannot unmarshal !!str `abc` into int" -> plain words.
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		want := typeName(reflect.TypeOf(dst).Elem())
		if strings.HasPrefix(msg, "cannot unmarshal") {
			return fmt.Sprintf("expected %s, got %s", want, describeNode(v))
		}
		return msg
	}
	return err.Error()
}

func typeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration such as 90s"
	case reflect.TypeFor[*bool]():
		return "true or false"
	}
	switch t.Kind() {
	case reflect.Int:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Map:
		return "a mapping of names to strings"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		return fmt.Sprintf("%q", v)
	default:
		return kindName(n)
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func valueNode(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return m
}

func yamlSyntaxProblem(path string, err error) Problem {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, perr := strconv.Atoi(rest[:i]); perr == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return Problem{Pos: Pos{File: path, Line: line, Col: 1}, Msg: "invalid YAML: " + msg}
}

func jobLabel(j *JobSpec, i int) string {
	if j.Name != "" {
		return strconv.Quote(j.Name)
	}
	return strconv.Itoa(i + 1)
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// suggest returns ` (did you mean "x"?)` for a near miss among known names.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := levenshtein(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Cap gives the job the operator's limits where it set none of its own
// (pneuma serve's client policy): max_turns, max_budget_usd and timeout; a
// zero cap sets nothing. A value the job set is the policy's to refuse.
func (j *JobSpec) Cap(maxTurns int, maxBudgetUSD float64, timeout time.Duration) {
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
func (j *JobSpec) ForceSandbox() {
	if j.set == nil {
		j.set = map[string]bool{}
	}
	if j.Sandbox == nil {
		j.Sandbox = &sandbox.Spec{}
	}
	j.Sandbox.Enabled, j.set["sandbox"] = true, true
}
