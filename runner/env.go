package runner

import (
	"strings"
)

// cliEnv lets Options.CLIEnv change a job's CLI environment.
func (r *run) cliEnv(job string, env []string) []string {
	if r.opts.CLIEnv == nil {
		return env
	}
	return r.opts.CLIEnv(r.plan.RunID, job, env)
}

// childEnv builds a job's CLI environment: pneuma's own, without CLAUDECODE
// (set inside a Claude Code session, it would make the CLI think it is
// nested), plus the job's env.
func childEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDECODE" {
			continue
		}
		if _, ok := extra[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func envLookup(env []string) func(string) string {
	return func(key string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
				return v
			}
		}
		return ""
	}
}
