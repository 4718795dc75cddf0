package runner

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// TestNewerFieldsBecomeFlags: agents, agent, effort, plugin_dirs and
// include_hook_events reach the CLI's argv; agents as one JSON object in
// the CLI's own spelling, plugin_dirs resolved against the jobs file.
func TestNewerFieldsBecomeFlags(t *testing.T) {
	f, err := jobfile.Decode("/w/jobs.yaml", []byte(`version: 1
jobs:
  - name: a
    prompt: x
    agent: reviewer
    effort: xhigh
    plugin_dirs: [plugins/mine, /opt/p]
    include_hook_events: true
    agents:
      reviewer: {description: Reviews code, prompt: You review., tools: [Read, Grep], disallowedTools: [Bash], maxTurns: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	args := cliOptions(f.Jobs[0], "/w").Args()
	for _, want := range [][]string{{"--agent", "reviewer"}, {"--effort", "xhigh"}, {"--plugin-dir=/w/plugins/mine"}, {"--plugin-dir=/opt/p"}, {"--include-hook-events"}} {
		if i := slices.Index(args, want[0]); i < 0 || (len(want) == 2 && (i+1 >= len(args) || args[i+1] != want[1])) {
			t.Errorf("argv %q lacks %q", args, want)
		}
	}
	i := slices.Index(args, "--agents")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("argv %q lacks --agents", args)
	}
	var agents map[string]map[string]any
	if err := json.Unmarshal([]byte(args[i+1]), &agents); err != nil {
		t.Fatalf("--agents is not JSON: %v", err)
	}
	r := agents["reviewer"]
	if r["description"] != "Reviews code" || r["prompt"] != "You review." || r["maxTurns"] != 3.0 ||
		len(r["disallowedTools"].([]any)) != 1 || r["model"] != nil {
		t.Errorf("--agents %s", args[i+1])
	}
}
