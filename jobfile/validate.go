package jobfile

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pneuma-cli/pneuma/policy"
)

// PermissionModes are the values the CLI accepts for --permission-mode.
func PermissionModes() []string { return slices.Clone(permissionModes) }

// permissionModes are the values the CLI accepts for --permission-mode.
var permissionModes = []string{"default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"}

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

func (d *decoder) validateJob(j *Job) {
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

func jobLabel(j *Job, i int) string {
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

// effortLevels are the values the CLI accepts for --effort.
var effortLevels = []string{"low", "medium", "high", "xhigh", "max"}

// agentMemories are the values of an agent's memory.
var agentMemories = []string{"user", "project", "local"}

// agentName is what the CLI takes as an agent's name.
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// validateAgents checks agents, agent, effort and plugin_dirs.
func (d *decoder) validateAgents(j *Job) {
	if j.set["effort"] && !slices.Contains(effortLevels, j.Effort) {
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
		case a.PermissionMode != "" && !slices.Contains(permissionModes, a.PermissionMode):
			d.errorAt(at, "agents.%s.permissionMode %q is not one of %s", name, a.PermissionMode, strings.Join(permissionModes, ", "))
		case a.Effort != "" && !slices.Contains(effortLevels, a.Effort):
			d.errorAt(at, "agents.%s.effort %q is not one of %s", name, a.Effort, strings.Join(effortLevels, ", "))
		case a.Memory != "" && !slices.Contains(agentMemories, a.Memory):
			d.errorAt(at, "agents.%s.memory %q is not one of %s", name, a.Memory, strings.Join(agentMemories, ", "))
		case a.MaxTurns < 0:
			d.errorAt(at, "agents.%s.maxTurns must not be negative", name)
		}
	}
}
