package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestE2EHookEvents: a job with include_hook_events and two hooks (one
// succeeds, one exits 1) runs on the real CLI under `pneuma serve` and
// under `pneuma run`. Its hook lines reach the run's WebSocket and the run
// directory's events.jsonl as hook events (without the hooks' output),
// and both reports count the hooks run and the one that failed.
func TestE2EHookEvents(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("listed")
		}
		return fakeapi.ToolUse(fakeapi.Read(filepath.Join(r.WorkingDir(), "README.md"))) // read-only: no permission asked
	})
	env := claudetest.NewEnv(t, api.URL)
	jobs := fmt.Sprintf(`version: 1
defaults:
  repo: %s
jobs:
  - name: hooked
    prompt: list things
    include_hook_events: true
    settings: '{"hooks":{"PreToolUse":[{"matcher":"Read","hooks":[{"type":"command","command":"echo HOOK-SAID-THIS"}]}],"PostToolUse":[{"matcher":"Read","hooks":[{"type":"command","command":"exit 1"}]}]}}'
`, repo)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	s := startServer(t, env, repo)
	s.stop(syscall.SIGTERM)
	s.args = append(s.args, "--client-allow", "settings") // the hooks are the job's settings
	s.restart()
	var created struct{ ID string }
	s.must(201, "POST", "/api/runs", map[string]string{"jobs_yaml": jobs}, &created)
	c := s.follow(ctx, "/api/runs/"+created.ID+"/ws", 0)
	c.await("run_finished", "")
	checkHookEvents(t, "the WebSocket", c.events())
	checkHookCounts(t, "served", readReport(t, filepath.Join(s.stateDir(), "runs", created.ID, "report.json")))

	out := t.TempDir()
	jobsFile := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(jobsFile, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, pneumaBinary(t), "run", "-q", "--output-dir", out, "--claude", claudetest.Binary(t), jobsFile)
	cmd.Dir, cmd.Env = repo, env.Environ()
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pneuma run: %v\n%s", err, msg)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "runs", "*", "events.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("pneuma run wrote %d events.jsonl", len(logs))
	}
	checkHookEvents(t, "events.jsonl", readJSONL(t, logs[0]))
	checkHookCounts(t, "pneuma run", readReport(t, filepath.Join(filepath.Dir(logs[0]), "report.json")))
}

// checkHookEvents: evs hold the started and answered hook events of both
// hooks, the PostToolUse one failed, and none carries a hook's output.
func checkHookEvents(t *testing.T, where string, evs []map[string]any) {
	t.Helper()
	seen := map[string]string{}
	for _, ev := range evs {
		if ev["type"] != "hook" {
			continue
		}
		line, _ := json.Marshal(ev)
		if strings.Contains(string(line), "HOOK-SAID-THIS") {
			t.Errorf("%s: a hook event carries the hook's output: %s", where, line)
		}
		h, _ := ev["hook"].(map[string]any)
		if ev["job"] != "hooked" || h == nil {
			t.Errorf("%s: hook event of another job or without its hook: %s", where, line)
			continue
		}
		seen[fmt.Sprintf("%v %v", h["hook_name"], h["phase"])] = fmt.Sprint(h["outcome"])
	}
	want := map[string]string{"PreToolUse:Read started": "<nil>", "PreToolUse:Read response": "success",
		"PostToolUse:Read started": "<nil>", "PostToolUse:Read response": "error"}
	for k, outcome := range want {
		if got, ok := seen[k]; !ok || got != outcome {
			t.Errorf("%s: hook event %q: outcome %q (seen %v), want %q", where, k, got, ok, outcome)
		}
	}
}

func checkHookCounts(t *testing.T, where string, rep map[string]any) {
	t.Helper()
	jobs, _ := rep["jobs"].([]any)
	if len(jobs) != 1 {
		t.Fatalf("%s: report has %d jobs", where, len(jobs))
	}
	j := jobs[0].(map[string]any)
	if j["status"] != "succeeded" {
		t.Fatalf("%s: job %v/%v: %v", where, j["status"], j["reason"], j["error"])
	}
	if runs, _ := j["hook_runs"].(float64); runs < 2 || j["hook_failures"] != float64(1) {
		t.Errorf("%s: hook_runs %v hook_failures %v, want at least 2 and 1", where, j["hook_runs"], j["hook_failures"])
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
	return out
}
