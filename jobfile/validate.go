package jobfile

import (
	"strconv"
	"strings"

	"github.com/pneuma-cli/pneuma/policy"
)

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
