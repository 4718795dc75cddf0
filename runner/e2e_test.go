package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// These tests run pneuma's runner end to end: real git repositories, real
// worktrees, the real Claude Code CLI, and the fake Anthropic API scripted per
// job (each job's prompt carries a token the handler routes on).

const e2eTimeout = 3 * time.Minute

// script answers for one job, by the job's token in the first prompt.
type script func(r *fakeapi.Request, dir string) fakeapi.Response

// bed is a run's environment: repositories, fake API, CLI environment.
type bed struct {
	t    *testing.T
	bin  string
	api  *fakeapi.Server
	env  *claudetest.Env
	mu   sync.Mutex
	jobs map[string]script // token -> script
	dirs map[string]string // token -> job dir
}

func newBed(t *testing.T, opts ...claudetest.EnvOption) *bed {
	t.Helper()
	b := &bed{t: t, bin: claudetest.Binary(t), jobs: map[string]script{}, dirs: map[string]string{}}
	b.api = fakeapi.New(t, b.handle)
	b.env = claudetest.NewEnv(t, b.api.URL, opts...)
	return b
}

func (b *bed) handle(r *fakeapi.Request) fakeapi.Response {
	b.mu.Lock()
	defer b.mu.Unlock()
	prompt := r.FirstUser().Text()
	for token, s := range b.jobs {
		if strings.Contains(prompt, token) {
			return s(r, b.dirs[token])
		}
	}
	return fakeapi.Text("no script for this prompt")
}

// writeFile writes file in the job's dir, then answers with text.
func writeFile(name, content string) script {
	return func(r *fakeapi.Request, dir string) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("wrote " + name).WithUsage(fakeapi.Usage{Input: 300, Output: 40, CacheRead: 1000})
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, name), content)).WithUsage(fakeapi.Usage{Input: 200, Output: 30})
	}
}

// plan decodes a jobs file written into repo and plans it with run id "e2e".
func (b *bed) plan(repo, jobsYAML string) *runner.Plan {
	b.t.Helper()
	path := filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte(jobsYAML), 0o644); err != nil {
		b.t.Fatal(err)
	}
	f, err := jobfile.Read(path)
	if err != nil {
		b.t.Fatal(err)
	}
	p, err := runner.BuildPlan(context.Background(), f, runner.PlanOptions{
		RunID: "e2e", Binary: b.bin, Stagger: -1, Getenv: envGetter(b.env.Environ()), IsRoot: os.Geteuid() == 0,
	})
	if err != nil {
		b.t.Fatalf("plan: %v", err)
	}
	b.mu.Lock()
	for _, j := range p.Jobs {
		for token := range b.jobs {
			if strings.Contains(strings.Join(j.Prompts, "\n"), token) {
				b.dirs[token] = j.Dir
			}
		}
	}
	b.mu.Unlock()
	return p
}

func (b *bed) run(p *runner.Plan) *report.Report {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	rep, err := runner.Run(ctx, p, runner.Options{
		Environ:      b.env.Environ(),
		StopGrace:    500 * time.Millisecond,
		RetryBackoff: 10 * time.Millisecond,
	})
	rep = loadReport(b.t, rep)
	if err != nil {
		b.t.Fatalf("run: %v", err)
	}
	validateReport(b.t, runner.RunReportPath(p))
	return rep
}

func envGetter(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range env {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}
}

func jobByName(t *testing.T, r *report.Report, name string) report.Job {
	t.Helper()
	for _, j := range r.Jobs {
		if j.Name == name {
			return j
		}
	}
	t.Fatalf("no job %q in report", name)
	return report.Job{}
}

// validateReport checks report.json against the published JSON Schema.
func validateReport(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Validate(data); err != nil {
		t.Errorf("%s does not match the report schema: %v", path, err)
	}
}

// streamResults returns the result lines of a job's stream.jsonl.
func streamResults(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range claudetest.ReadJSONL(t, path) {
		if l["type"] == "result" {
			out = append(out, l)
		}
	}
	return out
}

func TestRunJobsAcrossRepos(t *testing.T) {
	b := newBed(t)
	repoA := claudetest.GitRepo(t)
	repoB := claudetest.GitRepo(t)
	b.jobs["TOKEN-A1"] = writeFile("a1.txt", "from a1\n")
	b.jobs["TOKEN-A2"] = writeFile("a2.txt", "from a2\n")
	b.jobs["TOKEN-B"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		switch r.Turn() {
		case 0:
			return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "b.txt"), "from b\n"))
		case 1:
			return fakeapi.ToolUse(fakeapi.Bash("git add -A && git commit -q -m 'agent commit'"))
		}
		return fakeapi.Text("committed b")
	}
	p := b.plan(repoA, `version: 1
concurrency: 3
defaults:
  permission_mode: acceptEdits
  max_turns: 5
jobs:
  - name: a one
    prompt: TOKEN-A1 write a1.txt
  - name: a/two
    prompt: TOKEN-A2 write a2.txt
  - name: b
    repo: `+repoB+`
    permission_mode: bypassPermissions
    prompt: TOKEN-B write b.txt and commit it
`)
	rep := b.run(p)

	if rep.Status != report.RunSucceeded || rep.Totals.Succeeded != 3 {
		t.Fatalf("run status %s, totals %+v; jobs: %+v", rep.Status, rep.Totals, rep.Jobs)
	}
	var sum float64
	var turns int
	for _, j := range p.Jobs {
		res := jobByName(t, rep, j.Name)
		results := streamResults(t, res.Stream)
		if len(results) != 1 {
			t.Fatalf("job %s: %d results in stream, want 1", j.Name, len(results))
		}
		cost := results[0]["total_cost_usd"].(float64)
		if math.Abs(res.CostUSD-cost) > 1e-12 || res.CostEstimated {
			t.Errorf("job %s: cost %v (estimated %v), CLI said %v", j.Name, res.CostUSD, res.CostEstimated, cost)
		}
		sum += cost
		turns += int(results[0]["num_turns"].(float64))
		if res.SessionID == "" || res.SessionID != results[0]["session_id"] {
			t.Errorf("job %s: session id %q, stream says %v", j.Name, res.SessionID, results[0]["session_id"])
		}
		if res.Transcript == "" {
			t.Errorf("job %s: no transcript archived", j.Name)
		} else if _, err := os.Stat(res.Transcript); err != nil {
			t.Errorf("job %s: transcript: %v", j.Name, err)
		}
		if res.Worktree != "" {
			t.Errorf("job %s succeeded but its worktree %s was kept", j.Name, res.Worktree)
		}
		if _, err := os.Stat(j.Dir); !os.IsNotExist(err) {
			t.Errorf("job %s: worktree dir still exists (%v)", j.Name, err)
		}
		if res.FilesChanged != 1 || res.Insertions != 1 || res.Commit == "" {
			t.Errorf("job %s: files %d, +%d, commit %q; want 1 file, +1", j.Name, res.FilesChanged, res.Insertions, res.Commit)
		}
	}
	if math.Abs(rep.Totals.CostUSD-sum) > 1e-12 || rep.Totals.NumTurns != turns {
		t.Errorf("totals cost %v turns %d, want the CLI's %v and %d", rep.Totals.CostUSD, rep.Totals.NumTurns, sum, turns)
	}

	// Each branch holds its own file and nothing else leaked between worktrees.
	want := map[string]struct{ repo, file string }{
		"a one": {repoA, "a1.txt"},
		"a/two": {repoA, "a2.txt"},
		"b":     {repoB, "b.txt"},
	}
	for _, j := range p.Jobs {
		w := want[j.Name]
		files := claudetest.Git(t, w.repo, "diff", "--name-only", j.BaseCommit, j.Branch)
		if strings.TrimSpace(files) != w.file {
			t.Errorf("branch %s changes %q, want only %s", j.Branch, files, w.file)
		}
	}
	if got := claudetest.Git(t, repoB, "log", "-1", "--format=%s", "pneuma/e2e/b"); strings.TrimSpace(got) != "agent commit" {
		t.Errorf("job b's branch head is %q, want the agent's own commit", got)
	}
	if got := claudetest.Git(t, repoA, "log", "-1", "--format=%s", p.Jobs[0].Branch); !strings.HasPrefix(got, "pneuma: a one") {
		t.Errorf("leftover work of job 'a one' committed as %q", got)
	}
	// The main checkouts are untouched and .pneuma is ignored.
	for _, repo := range []string{repoA, repoB} {
		if st := claudetest.Git(t, repo, "status", "--porcelain"); strings.TrimSpace(st) != "" && strings.TrimSpace(st) != "?? jobs.yaml" {
			t.Errorf("repo %s status:\n%s", repo, st)
		}
		// Each repository has .pneuma excluded, its pattern written once
		// (the run checks each repository once, not before every job).
		data, err := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
		if n := strings.Count("\n"+string(data), "\n"+runner.ExcludePattern+"\n"); err != nil || n != 1 {
			t.Errorf("repo %s: info/exclude has %d lines %q (%v), want one", repo, n, runner.ExcludePattern, err)
		}
	}
	if p.Jobs[1].Slug != "a-two" || p.Jobs[0].Slug != "a-one" {
		t.Errorf("slugs %q %q", p.Jobs[0].Slug, p.Jobs[1].Slug)
	}
}

func TestRunMixedOutcomes(t *testing.T) {
	b := newBed(t, claudetest.WithMaxRetries(0))
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-OK"] = writeFile("ok.txt", "ok\n")
	// A model that keeps calling tools hits max_turns.
	b.jobs["TOKEN-LOOP"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.ToolUse(fakeapi.Bash("echo again"))
	}
	b.jobs["TOKEN-500"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Error(500, "api_error", "boom").WithHeader("x-should-retry", "false")
	}
	b.jobs["TOKEN-DENIED"] = writeFile("denied.txt", "nope\n")
	p := b.plan(repo, `version: 1
concurrency: 4
defaults:
  permission_mode: acceptEdits
  max_turns: 5
jobs:
  - name: ok
    prompt: TOKEN-OK
  - name: loop
    prompt: TOKEN-LOOP
    permission_mode: bypassPermissions
    max_turns: 2
  - name: api
    prompt: TOKEN-500
  - name: denied
    prompt: TOKEN-DENIED
    permission_mode: default
`)
	rep := b.run(p)
	if rep.Status != report.RunFailed || rep.Totals.Failed != 2 || rep.Totals.Succeeded != 2 {
		t.Fatalf("run %s totals %+v", rep.Status, rep.Totals)
	}
	loop := jobByName(t, rep, "loop")
	if loop.Status != report.StatusFailed || loop.Reason != report.ReasonMaxTurns || loop.ExitCode != 1 {
		t.Errorf("loop: %s/%s exit %d (%s)", loop.Status, loop.Reason, loop.ExitCode, loop.Error)
	}
	if loop.Worktree == "" {
		t.Errorf("failed job's worktree must be kept")
	}
	api := jobByName(t, rep, "api")
	if api.Status != report.StatusFailed || api.Reason != report.ReasonAPIError || !strings.Contains(api.Error, "500") {
		t.Errorf("api: %s/%s %q", api.Status, api.Reason, api.Error)
	}
	denied := jobByName(t, rep, "denied")
	if len(denied.PermissionDenials) != 1 || denied.PermissionDenials[0].ToolName != "Write" {
		t.Errorf("denied: permission denials %+v", denied.PermissionDenials)
	}
	if denied.FilesChanged != 0 {
		t.Errorf("denied job changed %d files", denied.FilesChanged)
	}
	ok := jobByName(t, rep, "ok")
	if ok.Status != report.StatusSucceeded || ok.FilesChanged != 1 {
		t.Errorf("ok: %+v", ok)
	}
	// The run's journal records every job finished.
	j, err := runner.ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range j.Jobs {
		if s.State != runner.StateFinished || s.Result == nil {
			t.Errorf("journal: job %s is %s", s.Name, s.State)
		}
	}
	data, _ := json.Marshal(rep)
	if strings.Contains(string(data), b.env.APIKey) {
		t.Errorf("report contains the API key")
	}
}

func TestRetryResumesSession(t *testing.T) {
	// The CLI gives up at once (no retries of its own); pneuma retries the
	// job, continuing the same session so the finished work is not redone.
	b := newBed(t, claudetest.WithMaxRetries(0))
	repo := claudetest.GitRepo(t)
	var calls int
	b.jobs["TOKEN-FLAKY"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		calls++
		switch {
		case calls == 1:
			return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "step1.txt"), "one\n"))
		case calls == 2:
			return fakeapi.Error(529, "overloaded_error", "Overloaded")
		case r.HasToolResult() && !lastUserSays(r, "Continue where you left off"):
			// 2.1.332 sends the retry's continue prompt in the same user
			// message as the pending tool result: that is not step 2's.
			return fakeapi.Text("all done")
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "step2.txt"), "two\n"))
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: flaky
    prompt: TOKEN-FLAKY do two steps
    permission_mode: acceptEdits
    retries: 2
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded || len(j.Attempts) != 2 {
		t.Fatalf("flaky: %s/%s after %d attempts: %+v", j.Status, j.Reason, len(j.Attempts), j.Attempts)
	}
	first, second := j.Attempts[0], j.Attempts[1]
	if first.Reason != report.ReasonAPIError || second.Status != report.StatusSucceeded {
		t.Errorf("attempts %+v", j.Attempts)
	}
	if first.SessionID == "" || second.SessionID != first.SessionID || j.SessionID != first.SessionID {
		t.Errorf("the retry did not continue the session: %q then %q", first.SessionID, second.SessionID)
	}
	if math.Abs(j.CostUSD-(first.CostUSD+second.CostUSD)) > 1e-12 {
		t.Errorf("job cost %v is not the sum of its attempts %v + %v", j.CostUSD, first.CostUSD, second.CostUSD)
	}
	// The retry's first request carries the earlier conversation and the
	// continue prompt, and the first step's file is not written again.
	reqs := b.api.Requests()
	retry := reqs[2]
	if !lastUserSays(&retry, "Continue where you left off") || len(retry.Messages) < 4 {
		t.Errorf("retry request: last user %q, %d messages", retry.LastUser().Text(), len(retry.Messages))
	}
	files := strings.Fields(claudetest.Git(t, repo, "diff", "--name-only", p.Jobs[0].BaseCommit, p.Jobs[0].Branch))
	if strings.Join(files, ",") != "step1.txt,step2.txt" {
		t.Errorf("branch changes %v", files)
	}
}

// lastUserSays reports whether the last user message of r holds s in a text
// block or a tool_result's content.
func lastUserSays(r *fakeapi.Request, s string) bool {
	if strings.Contains(r.Text(), s) {
		return true
	}
	for _, tr := range r.ToolResults() {
		if strings.Contains(tr.Content, s) {
			return true
		}
	}
	return false
}

func TestVerifyLoop(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "expected.txt"), []byte("fixed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	claudetest.Git(t, repo, "add", "expected.txt")
	claudetest.Git(t, repo, "commit", "-q", "-m", "expected")
	b.jobs["TOKEN-VERIFY"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		last := r.LastUser().Text()
		switch {
		case r.HasToolResult():
			return fakeapi.Text("done")
		case strings.Contains(last, "verification command"):
			return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "status.txt"), "fixed\n"))
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "status.txt"), "broken\n"))
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: fix
    prompt: TOKEN-VERIFY make status.txt right
    permission_mode: acceptEdits
    verify:
      command: [diff, expected.txt, status.txt]
      timeout: 30s
      attempts: 3
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded || len(j.Verify) != 2 {
		t.Fatalf("fix: %s/%s (%s), %d rounds: %+v", j.Status, j.Reason, j.Error, len(j.Verify), j.Verify)
	}
	if j.Verify[0].Passed || j.Verify[0].ExitCode != 1 || !strings.Contains(j.Verify[0].Output, "> broken") || !j.Verify[1].Passed {
		t.Errorf("rounds %+v", j.Verify)
	}
	if j.Verify[0].CostUSD <= 0 || j.Verify[1].CostUSD <= 0 || math.Abs(j.Verify[0].CostUSD+j.Verify[1].CostUSD-j.CostUSD) > 1e-9 {
		t.Errorf("round costs %v + %v, job cost %v", j.Verify[0].CostUSD, j.Verify[1].CostUSD, j.CostUSD)
	}
	// The follow-up the fake API received carries the command's output.
	var followUp string
	for _, r := range b.api.Requests() {
		if txt := r.LastUser().Text(); strings.Contains(txt, "verification command") {
			followUp = txt
		}
	}
	if !strings.Contains(followUp, "diff expected.txt status.txt") || !strings.Contains(followUp, "> broken") {
		t.Errorf("follow-up prompt:\n%s", followUp)
	}
	if got := claudetest.Git(t, repo, "show", p.Jobs[0].Branch+":status.txt"); strings.TrimSpace(got) != "fixed" {
		t.Errorf("branch holds status.txt %q", got)
	}
}

func TestVerifyFailsAfterAttempts(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-HOPELESS"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("I tried")
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: hopeless
    prompt: TOKEN-HOPELESS
    verify: {command: [test, -e, never-there.txt], attempts: 2}
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusFailed || j.Reason != report.ReasonVerifyFailed || len(j.Verify) != 2 {
		t.Fatalf("hopeless: %s/%s %q, rounds %d", j.Status, j.Reason, j.Error, len(j.Verify))
	}
}

func TestFollowUpPrompts(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-THREE"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("answer to: " + r.LastUser().Text()).WithUsage(fakeapi.Usage{Input: 1000, Output: 100})
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: three
    prompts:
      - TOKEN-THREE first
      - second
      - third
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	results := streamResults(t, j.Stream)
	if j.Status != report.StatusSucceeded || len(results) != 3 {
		t.Fatalf("three: %s/%s, %d results", j.Status, j.Reason, len(results))
	}
	last := results[2]["total_cost_usd"].(float64)
	first := results[0]["total_cost_usd"].(float64)
	if math.Abs(j.CostUSD-last) > 1e-12 || last <= first {
		t.Errorf("job cost %v; results' cumulative costs %v … %v: want the last", j.CostUSD, first, last)
	}
	if j.NumTurns != 3 || j.Result != "answer to: third" {
		t.Errorf("turns %d, result %q", j.NumTurns, j.Result)
	}
	var prompts []string
	for _, r := range b.api.Requests() {
		prompts = append(prompts, r.LastUser().Text())
	}
	if len(prompts) != 3 || prompts[1] != "second" || prompts[2] != "third" {
		t.Errorf("prompts sent %q", prompts)
	}
}

func TestPolicyDeniesInBypassMode(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "keep.txt"), []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	claudetest.Git(t, repo, "add", "keep.txt")
	claudetest.Git(t, repo, "commit", "-q", "-m", "keep")
	b.jobs["TOKEN-POLICY"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		switch r.Turn() {
		case 0:
			return fakeapi.ToolUse(fakeapi.Bash("rm -rf " + filepath.Join(dir, "keep.txt")))
		case 1:
			return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, "ok.txt"), "fine\n"))
		}
		return fakeapi.Text("done despite the denial")
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: guarded
    prompt: TOKEN-POLICY clean up
    permission_mode: bypassPermissions
    policy:
      deny: ["Bash(rm -rf *)"]
      allow: [Write, Read]
      default: deny
      message: Deleting files is not allowed in this run.
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("guarded: %s/%s %s", j.Status, j.Reason, j.Error)
	}
	if got := claudetest.Git(t, repo, "show", p.Jobs[0].Branch+":keep.txt"); strings.TrimSpace(got) != "precious" {
		t.Errorf("keep.txt on the branch: %q (the denied rm ran?)", got)
	}
	if got := claudetest.Git(t, repo, "show", p.Jobs[0].Branch+":ok.txt"); strings.TrimSpace(got) != "fine" {
		t.Errorf("the allowed Write did not run: %q", got)
	}
	if j.ToolCalls != 2 || j.ToolDenials != 1 {
		t.Errorf("tool calls %d, denials %d; want 2 and 1", j.ToolCalls, j.ToolDenials)
	}
	if len(j.PermissionDenials) != 1 || j.PermissionDenials[0].ToolName != "Bash" {
		t.Errorf("permission denials %+v", j.PermissionDenials)
	}
	// The model read the policy's message in the tool result.
	var sawMessage bool
	for _, r := range b.api.Requests() {
		for _, tr := range r.ToolResults() {
			if strings.Contains(string(tr.Content), "Deleting files is not allowed") {
				sawMessage = true
			}
		}
	}
	if !sawMessage {
		t.Errorf("the denial message never reached the model")
	}
	entries := claudetest.ReadJSONL(t, j.Audit)
	if len(entries) != 2 {
		t.Fatalf("audit has %d entries, want 2: %v", len(entries), entries)
	}
	bash, write := entries[0], entries[1]
	if bash["tool"] != "Bash" || bash["decision"] != "deny" || bash["rule"] != "Bash(rm -rf *)" || bash["ok"] != false {
		t.Errorf("audit of the rm: %v", bash)
	}
	if write["tool"] != "Write" || write["decision"] != "allow" || write["rule"] != "Write" || write["ok"] != true {
		t.Errorf("audit of the write: %v", write)
	}
}

func TestPolicyEditedInputIsApplied(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	// The model asks for a 60 s command; the policy caps it at 2 s. From
	// 2.1.332 on the Bash tool refuses a leading `sleep 60` itself, so the
	// command is one that never ends (2.1.197 moves `tail -f` to the
	// background instead).
	command := "sleep 60"
	if claudetest.AtLeast(t, b.bin, "2.1.332") {
		command = "tail -f /dev/null"
	}
	b.jobs["TOKEN-SLOW"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("gave up waiting")
		}
		return fakeapi.ToolUse(fakeapi.Tool("Bash", map[string]any{"command": command, "description": "wait", "timeout": 60000}))
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: capped
    prompt: TOKEN-SLOW wait a minute
    permission_mode: bypassPermissions
    policy:
      allow: ["Bash(sleep *)", "Bash(tail *)"]
      bash_timeout: 2s
`)
	start := time.Now()
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded {
		t.Fatalf("capped: %s/%s %s", j.Status, j.Reason, j.Error)
	}
	if took := time.Since(start); took > 45*time.Second {
		t.Errorf("the run took %s: the edited timeout was not applied", took)
	}
	var result string
	for _, r := range b.api.Requests() {
		for _, tr := range r.ToolResults() {
			result = tr.Content
		}
	}
	if !strings.Contains(strings.ToLower(result), "timed out") && !strings.Contains(strings.ToLower(result), "timeout") && !strings.Contains(strings.ToLower(result), "interrupted") {
		t.Errorf("the tool result does not show the 2 s limit: %q", result)
	}
	entries := claudetest.ReadJSONL(t, j.Audit)
	if len(entries) != 1 || entries[0]["edited"] != true || entries[0]["decision"] != "allow" {
		t.Errorf("audit %v", entries)
	}
}

func TestSequentialJobsReuseWorktreesWithoutLeaks(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	for _, n := range []string{"1", "2", "3"} {
		b.jobs["TOKEN-SEQ"+n] = writeFile("file"+n+".txt", "from job "+n+"\n")
	}
	p := b.plan(repo, `version: 1
concurrency: 1
defaults: {permission_mode: acceptEdits}
jobs:
  - {name: one, prompt: TOKEN-SEQ1}
  - {name: two, prompt: TOKEN-SEQ2}
  - {name: three, prompt: TOKEN-SEQ3}
`)
	rep := b.run(p)
	if rep.Status != report.RunSucceeded {
		t.Fatalf("run %s: %+v", rep.Status, rep.Jobs)
	}
	for i, j := range p.Jobs {
		want := fmt.Sprintf("file%d.txt", i+1)
		files := strings.Fields(claudetest.Git(t, repo, "diff", "--name-only", j.BaseCommit, j.Branch))
		if len(files) != 1 || files[0] != want {
			t.Errorf("branch %s changes %v, want only %s (a reused worktree leaked files)", j.Branch, files, want)
		}
		if _, err := os.Stat(j.Dir); !os.IsNotExist(err) {
			t.Errorf("worktree %s still exists after the run", j.Dir)
		}
	}
	if wts := claudetest.Git(t, repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
		t.Errorf("worktrees left behind:\n%s", wts)
	}
}

// A job that changes nothing hands its worktree, and the watch that vouched
// for it, to the next job: the watch must still see that job's changes.
func TestCarriedWatchSeesTheNextJobsChanges(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-CARRY2"] = writeFile("file2.txt", "from job two\n")
	b.jobs["TOKEN-CARRY4"] = writeFile("file4.txt", "from job four\n")
	p := b.plan(repo, `version: 1
concurrency: 1
defaults: {permission_mode: acceptEdits}
jobs:
  - {name: one, prompt: "TOKEN-CARRY1 say hello"}
  - {name: two, prompt: TOKEN-CARRY2}
  - {name: three, prompt: "TOKEN-CARRY3 say hello"}
  - {name: four, prompt: TOKEN-CARRY4}
`)
	rep := b.run(p)
	if rep.Status != report.RunSucceeded {
		t.Fatalf("run %s: %+v", rep.Status, rep.Jobs)
	}
	want := map[string]string{"one": "", "two": "file2.txt", "three": "", "four": "file4.txt"}
	for i, j := range p.Jobs {
		files := strings.Join(strings.Fields(claudetest.Git(t, repo, "diff", "--name-only", j.BaseCommit, j.Branch)), " ")
		if files != want[j.Name] {
			t.Errorf("branch %s changes %q, want %q", j.Branch, files, want[j.Name])
		}
		if got, wantN := rep.Jobs[i].FilesChanged, min(1, len(want[j.Name])); got != wantN {
			t.Errorf("job %s: files_changed %d, want %d", j.Name, got, wantN)
		}
	}
}
