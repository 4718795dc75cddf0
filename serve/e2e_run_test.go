package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// A run over the API: its events arrive live over the run's WebSocket
// with gapless seqs, and its report.json is the one `pneuma run` writes for
// the same jobs (once run ids, times, durations, paths and session ids are
// set aside).
func TestE2ERun(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		u := fakeapi.Usage{Input: 500, Output: 50}
		m := pleaseRE.FindStringSubmatch(r.Text())
		switch {
		case r.HasToolResult():
			return fakeapi.Text("done").WithUsage(u)
		case m == nil || m[1] == "answer":
			return fakeapi.Text("an answer").WithUsage(u)
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(r.WorkingDir(), m[1]+".txt"), m[1]+"\n")).WithUsage(u)
	})
	env := claudetest.NewEnv(t, api.URL)
	jobs := fmt.Sprintf(`version: 1
concurrency: 2
defaults:
  repo: %s
  permission_mode: acceptEdits
jobs:
  - name: alpha
    prompt: alpha please
  - name: beta
    prompt: beta please
  - name: gamma
    prompt: answer please
`, repo)

	s := startServer(t, env, repo)
	var created struct{ ID string }
	s.must(201, "POST", "/api/runs", map[string]string{"jobs_yaml": jobs}, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.follow(ctx, "/api/runs/"+created.ID+"/ws", 0)
	c.await("run_finished", "")
	evs := c.events()
	checkGapless(t, evs, 1)
	if evs[0]["type"] != "run_started" || countType(evs, "job_finished") != 3 {
		t.Fatalf("run events:\n%s", dump(evs))
	}
	// The fine events pneuma status reads come to a client like the rest
	// (docs/serve.md), and a long poll of the log replays what the
	// WebSocket sent, in the same order.
	if countType(evs, "tool_started") != 2 || countType(evs, "tool_call") != 2 || countType(evs, "turn_finished") != 3 {
		t.Errorf("the run's fine events are not all in its log:\n%s", dump(evs))
	}
	var polled []map[string]any
	for after := int64(0); ; {
		page := s.poll(fmt.Sprintf("/api/runs/%s/events?after=%d", created.ID, after))
		polled = append(polled, page.Events...)
		if after = page.NextAfter; after >= page.LastSeq {
			break
		}
	}
	if len(polled) != len(evs) {
		t.Errorf("a long poll replays %d events, the WebSocket sent %d", len(polled), len(evs))
	}
	for i := range min(len(polled), len(evs)) {
		if polled[i]["type"] != evs[i]["type"] || seqOf(polled[i]) != seqOf(evs[i]) {
			t.Errorf("event %d: long poll %v %v, WebSocket %v %v", i, seqOf(polled[i]), polled[i]["type"], seqOf(evs[i]), evs[i]["type"])
			break
		}
	}
	served := readReport(t, filepath.Join(s.stateDir(), "runs", created.ID, "report.json"))

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
	runs, _ := filepath.Glob(filepath.Join(out, "runs", "*", "report.json"))
	if len(runs) != 1 {
		t.Fatalf("pneuma run wrote %d reports", len(runs))
	}
	direct := readReport(t, runs[0])
	a, b := normalise(served, repo), normalise(direct, repo)
	if a != b {
		t.Fatalf("report.json of the served run differs from pneuma run's (served, then direct):\n%s", lineDiff(a, b))
	}
}

func readReport(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// volatile are the report fields that differ between two runs of the same
// jobs: ids, times, durations, paths, session ids.
var volatile = regexp.MustCompile(`(^|_)(id|time|at|ms|seconds|duration|dir|path|worktree|transcript|patch|stream|audit|commit|branch|output_dir|jobs_file|report|host|version|claude|started|finished|head|base_commit)$`)

// normalise renders a report with its volatile fields blanked, the
// repository path replaced, and jobs in name order.
func normalise(v any, repo string) string {
	var walk func(key string, v any) any
	walk = func(key string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if volatile.MatchString(k) {
					out[k] = "<" + k + ">"
					continue
				}
				out[k] = walk(k, e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(key, e)
			}
			if key == "jobs" {
				sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
			}
			return out
		case string:
			return strings.ReplaceAll(x, repo, "<repo>")
		}
		return v
	}
	data, _ := json.MarshalIndent(walk("", v), "", " ")
	return string(data)
}

// lineDiff lists the lines where a and b differ.
func lineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := range max(len(la), len(lb)) {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			fmt.Fprintf(&out, "%d: %s\n%d: %s\n", i+1, x, i+1, y)
		}
	}
	return out.String()
}
