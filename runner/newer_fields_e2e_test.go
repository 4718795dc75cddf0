package runner_test

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/report"
)

// TestNewerJobFieldsOnRealCLI: the real CLI takes agents, agent, effort
// and include_hook_events as pneuma passes them: the job runs as the agent
// it defines (the agent's prompt is the system prompt the API sees), and
// the hooks it ran are counted from the stream's hook lines.
func TestNewerJobFieldsOnRealCLI(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	var systems []string
	b.jobs["TOKEN-AGENT"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		systems = append(systems, r.System)
		mu.Unlock()
		return fakeapi.Text("reviewed")
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: agent
    prompt: TOKEN-AGENT review this
    effort: low
    include_hook_events: true
    settings: '{"hooks":{"UserPromptSubmit":[{"hooks":[{"type":"command","command":"true"}]}]}}'
    agent: reviewer
    agents:
      reviewer:
        description: Reviews code
        prompt: You are REVIEWER-PERSONA, a careful code reviewer.
        tools: [Read, Grep]
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("agent job: %s/%s: %s", j.Status, j.Reason, j.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(systems) == 0 || !strings.Contains(strings.Join(systems, "\n"), "REVIEWER-PERSONA") {
		t.Errorf("the API never saw the agent's prompt: --agents/--agent did not reach the CLI")
	}
	stream, err := os.ReadFile(j.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if j.HookRuns == 0 || !strings.Contains(string(stream), `"subtype":"hook_started"`) {
		t.Errorf("hook_runs %d; the stream has no hook_started line: include_hook_events did not reach the CLI", j.HookRuns)
	}
}
