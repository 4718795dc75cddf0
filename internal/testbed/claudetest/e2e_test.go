package claudetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// These tests run the real Claude Code CLI against the fake API. Each has its
// own server, HOME and working directory, so they run in parallel; each CLI
// run is bounded by runTimeout.

const runTimeout = 60 * time.Second

// cliPrices are the CLI's own prices (docs/claude-cli.md, section 2.5) per
// MTok of the default models of the pins: input, output and cache reads;
// cache writes (5 minutes) cost 1.25× input. claude-opus-4-8 is 2.1.197's
// default against an API key, claude-opus-5-5 2.1.332's.
var cliPrices = map[string]struct{ in, out, cacheRead float64 }{
	"claude-opus-4-8": {5, 25, 0.5},
	"claude-opus-5-5": {4, 20, 0.2},
}

// cliCost is what the CLI charges for u on model (the model of the request,
// as the fake API saw it); a model the table does not know fails the test,
// so a bump that brings a new default model says so here.
func cliCost(t *testing.T, model string, u fakeapi.Usage) float64 {
	t.Helper()
	p, ok := cliPrices[model]
	if !ok {
		t.Fatalf("the CLI used model %q, which cliPrices does not price: add the CLI's price for it", model)
	}
	return (float64(u.Input)*p.in + float64(u.Output)*p.out + float64(u.CacheWrite)*p.in*1.25 + float64(u.CacheRead)*p.cacheRead) / 1e6
}

// model is the model of the bed's first API request: the pinned CLI's default.
func (b *bed) model() string {
	b.t.Helper()
	reqs := b.api.Requests()
	if len(reqs) == 0 {
		b.t.Fatal("the fake API saw no request")
	}
	return reqs[0].Model
}

// bed is one test's fake API, environment and working directory.
type bed struct {
	t   *testing.T
	bin string
	api *fakeapi.Server
	env *claudetest.Env
	dir string
}

func newBed(t *testing.T, h fakeapi.Handler, opts ...claudetest.EnvOption) *bed {
	t.Helper()
	bin := claudetest.Binary(t)
	t.Parallel()
	api := fakeapi.New(t, h)
	return &bed{t: t, bin: bin, api: api, env: claudetest.NewEnv(t, api.URL, opts...), dir: claudetest.GitRepo(t)}
}

// run runs the CLI with a prompt argument and stream-json output.
func (b *bed) run(prompt string, extra ...string) *claudetest.Run {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	return claudetest.RunCLI(b.t, ctx, b.bin, b.dir, b.env, "", claudetest.PrintArgs(prompt, extra...)...)
}

// result returns the run's result line, failing the test when there is none.
func result(t *testing.T, r *claudetest.Run) map[string]any {
	t.Helper()
	res := r.Result()
	if res == nil {
		t.Fatalf("no result line; exit %d; stdout:\n%s", r.ExitCode, r.Stdout)
	}
	return res
}

// mainTranscript returns the lines of the session's transcript, checking that
// it is the one of the result's session id.
func mainTranscript(t *testing.T, env *claudetest.Env, sessionID string) []map[string]any {
	t.Helper()
	var main []string
	for _, p := range claudetest.Transcripts(t, env) {
		if !strings.Contains(p, string(filepath.Separator)+"subagents"+string(filepath.Separator)) {
			main = append(main, p)
		}
	}
	if len(main) != 1 || filepath.Base(main[0]) != sessionID+".jsonl" {
		t.Fatalf("main transcripts %v, want one named %s.jsonl", main, sessionID)
	}
	return claudetest.ReadJSONL(t, main[0])
}

// entries returns the transcript lines of a type, with the message content
// block of the given type (any when blockType is "").
func entries(lines []map[string]any, typ, blockType string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["type"] != typ {
			continue
		}
		if blockType == "" || len(blocksOf(l, blockType)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// blocksOf returns the content blocks of a line's message that have type typ.
func blocksOf(line map[string]any, typ string) []map[string]any {
	msg, _ := line["message"].(map[string]any)
	content, _ := msg["content"].([]any)
	var out []map[string]any
	for _, c := range content {
		if b, ok := c.(map[string]any); ok && b["type"] == typ {
			out = append(out, b)
		}
	}
	return out
}

// textOf returns the text of a line's message content, a string or blocks.
func textOf(line map[string]any) string {
	switch c := get(line, "message", "content").(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range blocksOf(line, "text") {
			parts = append(parts, b["text"].(string))
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// get walks nested maps: get(m, "message", "usage", "output_tokens").
func get(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func TestTextAnswerCost(t *testing.T) {
	usage := fakeapi.Usage{Input: 1200, Output: 80, CacheRead: 5000, CacheWrite: 300}
	b := newBed(t, fakeapi.Sequence(fakeapi.Text("Hello from the fake API.").WithUsage(usage)))
	run := b.run("Say hello.")

	res := result(t, run)
	if run.ExitCode != 0 || res["is_error"] != false || res["subtype"] != "success" || res["result"] != "Hello from the fake API." {
		t.Fatalf("exit %d, result %v", run.ExitCode, res)
	}
	want := cliCost(t, b.model(), usage) // 0.012375 on claude-opus-4-8
	if got, _ := res["total_cost_usd"].(float64); math.Abs(got-want) > 1e-9 {
		t.Errorf("total_cost_usd = %v, want %v", got, want)
	}
	for k, v := range map[string]float64{"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 5000, "cache_creation_input_tokens": 300} {
		if got := get(res, "usage", k); got != v {
			t.Errorf("result.usage.%s = %v, want %v", k, got, v)
		}
	}
	// modelUsage is keyed by the model as the init line names it
	// ("claude-opus-4-8[1m]" on 2.1.197, "claude-opus-5-5" on 2.1.332).
	initModel, _ := run.OfType("system")[0]["model"].(string)
	if got := get(res, "modelUsage", initModel, "costUSD"); got == nil || math.Abs(got.(float64)-want) > 1e-9 {
		t.Errorf("modelUsage[%q] costUSD = %v, want %v (modelUsage %v)", initModel, got, want, res["modelUsage"])
	}

	reqs := b.api.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != strings.TrimSuffix(initModel, "[1m]") || !r.Stream || r.Query != "beta=true" || !strings.HasSuffix(r.FirstUser().Text(), "Say hello.") ||
		r.Header.Get("x-api-key") != b.env.APIKey || !r.HasTool("Bash") || r.IsSubagent() {
		t.Errorf("request %s, query %q, first user %q", r.String(), r.Query, r.FirstUser().Text())
	}
	if u := b.api.Unhandled(); len(u) > 0 {
		t.Logf("CLI requests besides /v1/messages: %v", u)
	}

	// The stdout assistant line carries message_start usage (output 1); the
	// transcript the final usage (output 80), both with the fake's request-id.
	asst := run.OfType("assistant")
	if len(asst) != 1 || get(asst[0], "message", "usage", "output_tokens") != 1.0 || get(asst[0], "message", "stop_reason") != nil {
		t.Fatalf("stdout assistant lines: %v", asst)
	}
	rid, _ := asst[0]["request_id"].(string)
	lines := mainTranscript(t, b.env, res["session_id"].(string))
	ta := entries(lines, "assistant", "text")
	if len(ta) != 1 {
		t.Fatalf("transcript has %d assistant text lines", len(ta))
	}
	if get(ta[0], "message", "usage", "output_tokens") != 80.0 || get(ta[0], "message", "usage", "cache_read_input_tokens") != 5000.0 ||
		get(ta[0], "message", "stop_reason") != "end_turn" || ta[0]["requestId"] != rid || !strings.HasPrefix(rid, "req_fake_") ||
		get(ta[0], "message", "id") != get(asst[0], "message", "id") {
		t.Errorf("transcript assistant line: %v (stdout request_id %q)", ta[0], rid)
	}
	if len(entries(lines, "user", "")) != 1 {
		t.Errorf("transcript user lines: %v", entries(lines, "user", ""))
	}
	if strings.Contains(string(run.Stdout), b.env.APIKey) || strings.Contains(run.Stderr, b.env.APIKey) {
		t.Error("the API key appears in the CLI's output")
	}
}

func TestWriteAcceptEdits(t *testing.T) {
	b := newBed(t, nil) // the handler needs b.dir, set below
	target := filepath.Join(b.dir, "hello.txt")
	b.api.SetHandler(func(r *fakeapi.Request) fakeapi.Response {
		if !r.HasToolResult() {
			return fakeapi.ToolUse(fakeapi.Write(target, "hello\n")).WithText("I'll create the file.")
		}
		// Answer from the conversation: report what the tool said.
		tr := r.ToolResults()[0]
		if tr.IsError {
			return fakeapi.Text("write failed: " + tr.Content)
		}
		return fakeapi.Text("wrote it: " + tr.Content)
	})
	run := b.run("Create hello.txt.", "--permission-mode", "acceptEdits", "--max-turns", "4")

	res := result(t, run)
	if got, err := os.ReadFile(target); err != nil || string(got) != "hello\n" {
		t.Fatalf("hello.txt = %q, %v; result %v", got, err, res["result"])
	}
	if run.ExitCode != 0 || res["is_error"] != false || !strings.HasPrefix(res["result"].(string), "wrote it: ") ||
		!reflect.DeepEqual(res["permission_denials"], []any{}) || res["num_turns"] != 2.0 {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	want := 2 * cliCost(t, b.model(), fakeapi.DefaultUsage)
	if got := res["total_cost_usd"].(float64); math.Abs(got-want) > 1e-9 {
		t.Errorf("total_cost_usd = %v, want %v (two default responses)", got, want)
	}

	// stdout: one assistant line per block, the tool_result, the final text.
	var toolID string
	for _, a := range run.OfType("assistant") {
		for _, tu := range blocksOf(a, "tool_use") {
			toolID, _ = tu["id"].(string)
		}
	}
	users := run.OfType("user")
	if len(users) != 1 || get(blocksOf(users[0], "tool_result")[0], "tool_use_id") != toolID ||
		get(users[0], "tool_use_result", "type") != "create" || get(users[0], "tool_use_result", "filePath") != target {
		t.Errorf("stdout user lines %v (tool id %s)", users, toolID)
	}
	reqs := b.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if tr, ok := reqs[1].ToolResult(toolID); !ok || tr.IsError {
		t.Errorf("second request's tool_result for %s: %+v, %t", toolID, tr, ok)
	}

	lines := mainTranscript(t, b.env, res["session_id"].(string))
	tu := entries(lines, "assistant", "tool_use")
	tr := entries(lines, "user", "tool_result")
	if len(tu) != 1 || get(blocksOf(tu[0], "tool_use")[0], "input", "file_path") != target {
		t.Errorf("transcript tool_use lines: %v", tu)
	}
	if len(tr) != 1 || get(tr[0], "toolUseResult", "type") != "create" || get(tr[0], "toolUseResult", "content") != "hello\n" ||
		tr[0]["sourceToolAssistantUUID"] != tu[0]["uuid"] {
		t.Errorf("transcript tool_result lines: %v", tr)
	}
	if len(entries(lines, "assistant", "text")) != 2 { // "I'll create the file." and the final answer
		t.Errorf("transcript text lines: %v", entries(lines, "assistant", "text"))
	}
}

func TestBashCommitBypass(t *testing.T) {
	const cmd = "printf 'made by claude\\n' > new.txt && git add -A && git commit -q -m x && git log --oneline | wc -l"
	b := newBed(t, fakeapi.Turns(fakeapi.ToolUse(fakeapi.Bash(cmd)), fakeapi.Text("committed")))
	run := b.run("Commit a file.", "--permission-mode", "bypassPermissions", "--max-turns", "4")

	res := result(t, run)
	if run.ExitCode != 0 || res["is_error"] != false || res["result"] != "committed" {
		t.Fatalf("exit %d, result %v, stderr %s", run.ExitCode, res, run.Stderr)
	}
	if n := claudetest.Git(t, b.dir, "rev-list", "--count", "HEAD"); n != "2" {
		t.Errorf("commits on HEAD = %s, want 2", n)
	}
	if s := claudetest.Git(t, b.dir, "log", "-1", "--format=%s %an"); s != "x pneuma test" {
		t.Errorf("last commit = %q", s)
	}
	if files := claudetest.Git(t, b.dir, "show", "--name-only", "--format=", "HEAD"); files != "new.txt" {
		t.Errorf("files of the commit = %q", files)
	}
	if st := claudetest.Git(t, b.dir, "status", "--porcelain"); st != "" {
		t.Errorf("work tree not clean: %q", st)
	}

	users := run.OfType("user")
	if len(users) != 1 || strings.TrimSpace(get(users[0], "tool_use_result", "stdout").(string)) != "2" {
		t.Errorf("stdout tool_result: %v", users)
	}
	reqs := b.api.Requests()
	if len(reqs) != 2 || reqs[1].ToolResults()[0].IsError || strings.TrimSpace(reqs[1].ToolResults()[0].Content) != "2" {
		t.Errorf("the fake got tool results %+v", reqs[len(reqs)-1].ToolResults())
	}
	tr := entries(mainTranscript(t, b.env, res["session_id"].(string)), "user", "tool_result")
	if len(tr) != 1 || get(tr[0], "toolUseResult", "interrupted") != false || strings.TrimSpace(get(tr[0], "toolUseResult", "stdout").(string)) != "2" ||
		tr[0]["permissionMode"] != nil && tr[0]["permissionMode"] != "bypassPermissions" {
		t.Errorf("transcript tool_result: %v", tr)
	}
}

// TestAgentSubagent delegates to a subagent through the Agent tool. From
// 2.1.332 on the CLI runs it in the background by default: the Agent
// tool_result only says it started, the main thread answers, and the
// subagent's report comes back in a task notification; before, the
// tool_result held the report.
func TestAgentSubagent(t *testing.T) {
	mainThread := func(r *fakeapi.Request) fakeapi.Response {
		if report, ok := r.TaskNotification(); ok {
			return fakeapi.Text("main saw: " + report)
		}
		if !r.HasToolResult() {
			return fakeapi.ToolUse(fakeapi.Agent("count files", "SUBTASK: run a command and report"))
		}
		if tr := r.ToolResults()[0]; fakeapi.AsyncAgentLaunched(tr) {
			return fakeapi.Text("waiting for the subagent")
		}
		return fakeapi.Text("main saw: " + strings.SplitN(r.ToolResults()[0].Content, "\n", 2)[0])
	}
	sub := fakeapi.Turns(fakeapi.ToolUse(fakeapi.Bash("echo from-subagent")), fakeapi.Text("subagent report"))
	b := newBed(t, fakeapi.Route(mainThread, sub))
	background := claudetest.AtLeast(t, b.bin, "2.1.332")
	run := b.run("Delegate.", "--permission-mode", "bypassPermissions", "--max-turns", "6")

	res := result(t, run)
	if run.ExitCode != 0 || res["is_error"] != false || res["result"] != "main saw: subagent report" {
		t.Fatalf("exit %d, result %v", run.ExitCode, res)
	}
	// The main thread calls the API twice (the Agent call, its answer), and
	// once more for the notification when the subagent ran in the
	// background; the subagent twice. All at default usage: the total
	// includes the subagent, result.usage does not.
	mainCalls := 2
	if background {
		mainCalls = 3
	}
	if got, want := res["total_cost_usd"].(float64), float64(mainCalls+2)*cliCost(t, b.model(), fakeapi.DefaultUsage); math.Abs(got-want) > 1e-9 {
		t.Errorf("total_cost_usd = %v, want %v", got, want)
	}
	// result.usage covers the last turn's main-thread calls: both with the
	// subagent in the foreground, the notification's one in the background.
	lastTurn := mainCalls
	if background {
		lastTurn = 1
	}
	if got := get(res, "usage", "input_tokens"); got != float64(lastTurn*fakeapi.DefaultUsage.Input) {
		t.Errorf("result.usage.input_tokens = %v, want the main thread's %d call(s) of the last turn only", got, lastTurn)
	}
	var subReqs int
	for _, r := range b.api.Requests() {
		if r.IsSubagent() {
			subReqs++
			if !strings.Contains(r.FirstUser().Text(), "SUBTASK") {
				t.Errorf("subagent request without the Agent prompt: %q", r.FirstUser().Text())
			}
		}
	}
	if subReqs != 2 || len(b.api.Requests()) != mainCalls+2 {
		t.Errorf("%d subagent requests of %d, want 2 of %d", subReqs, len(b.api.Requests()), mainCalls+2)
	}

	var agentToolID string
	for _, a := range run.OfType("assistant") {
		for _, tu := range blocksOf(a, "tool_use") {
			if tu["name"] == "Agent" {
				agentToolID = tu["id"].(string)
			}
		}
	}
	var agentID string
	for _, s := range run.OfType("system") {
		if s["subtype"] == "task_started" && s["tool_use_id"] == agentToolID {
			agentID, _ = s["task_id"].(string)
		}
	}
	var subLines int
	for _, l := range run.Lines {
		if l["parent_tool_use_id"] == agentToolID && agentToolID != "" {
			subLines++
		}
	}
	if agentToolID == "" || agentID == "" || subLines == 0 {
		t.Fatalf("Agent tool id %q, task id %q, %d stdout lines of the subagent", agentToolID, agentID, subLines)
	}

	sid := res["session_id"].(string)
	main0 := mainTranscript(t, b.env, sid)
	tr := entries(main0, "user", "tool_result")
	if len(tr) != 1 || get(tr[0], "toolUseResult", "agentId") != agentID {
		t.Errorf("main transcript Agent tool_result: %v", tr)
	}
	var side string
	for _, p := range claudetest.Transcripts(t, b.env) {
		if strings.HasSuffix(p, filepath.Join(sid, "subagents", "agent-"+agentID+".jsonl")) {
			side = p
		}
	}
	if side == "" {
		t.Fatalf("no sidechain agent-%s.jsonl in %v", agentID, claudetest.Transcripts(t, b.env))
	}
	lines := claudetest.ReadJSONL(t, side)
	for i, l := range lines {
		// 2.1.332 also records each API request (api-request, -shape, -blob):
		// the subagent's carry its agentId but no isSidechain.
		request := strings.HasPrefix(fmt.Sprint(l["type"]), "api-request")
		if (l["isSidechain"] != true && !request) || l["agentId"] != agentID || l["sessionId"] != sid {
			t.Errorf("sidechain line %d: isSidechain %v agentId %v sessionId %v", i, l["isSidechain"], l["agentId"], l["sessionId"])
		}
	}
	if len(lines) == 0 || lines[0]["parentUuid"] != nil || !strings.Contains(textOf(lines[0]), "SUBTASK") {
		t.Errorf("sidechain first line: %v", lines[0])
	}
	if len(entries(lines, "assistant", "tool_use")) != 1 || len(entries(lines, "user", "tool_result")) != 1 || len(entries(lines, "assistant", "text")) != 1 {
		t.Errorf("sidechain holds %d lines, want a tool_use, its result and the final text", len(lines))
	}
	var meta struct{ ToolUseID string }
	data, err := os.ReadFile(strings.TrimSuffix(side, ".jsonl") + ".meta.json")
	if err != nil || json.Unmarshal(data, &meta) != nil || meta.ToolUseID != agentToolID {
		t.Errorf("meta.json = %s, %v; want toolUseId %s", data, err, agentToolID)
	}
}

func TestPersistent500(t *testing.T) {
	b := newBed(t, func(*fakeapi.Request) fakeapi.Response {
		return fakeapi.Error(500, "api_error", "Internal server error")
	}, claudetest.WithMaxRetries(1))
	run := b.run("Fail please.")

	res := result(t, run)
	if run.ExitCode != 1 || res["is_error"] != true || res["api_error_status"] != 500.0 || res["subtype"] != "success" ||
		!strings.HasPrefix(res["result"].(string), "API Error: 500") {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	var retries []map[string]any
	for _, s := range run.OfType("system") {
		if s["subtype"] == "api_retry" {
			retries = append(retries, s)
		}
	}
	if len(retries) != 1 || retries[0]["error_status"] != 500.0 || retries[0]["max_retries"] != 1.0 {
		t.Errorf("api_retry lines: %v", retries)
	}
	if n := len(b.api.Requests()); n != 2 {
		t.Errorf("fake saw %d requests, want 2 (one retry)", n)
	}
	errs := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "")
	if len(errs) != 1 || errs[0]["isApiErrorMessage"] != true || errs[0]["apiErrorStatus"] != 500.0 || get(errs[0], "message", "model") != "<synthetic>" {
		t.Errorf("transcript assistant lines: %v", errs)
	}
}

// TestStdinSameAsArgument drives the prompt of TestTextAnswerCost through
// stdin (--input-format stream-json) and through the argument, and compares.
func TestStdinSameAsArgument(t *testing.T) {
	usage := fakeapi.Usage{Input: 1200, Output: 80, CacheRead: 5000, CacheWrite: 300}
	answer := fakeapi.Text("Hello from the fake API.").WithUsage(usage)
	arg := newBed(t, fakeapi.Sequence(answer))
	stdin := &bed{t: t, bin: arg.bin, api: fakeapi.New(t, fakeapi.Sequence(answer))}
	stdin.env, stdin.dir = claudetest.NewEnv(t, stdin.api.URL), claudetest.GitRepo(t)

	argRun := arg.run("Say hello.")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	inRun := claudetest.RunCLI(t, ctx, stdin.bin, stdin.dir, stdin.env, claudetest.UserMessage("Say hello."), claudetest.StdinArgs()...)

	a, s := result(t, argRun), result(t, inRun)
	if inRun.ExitCode != 0 || argRun.ExitCode != 0 {
		t.Fatalf("exit codes: argument %d, stdin %d", argRun.ExitCode, inRun.ExitCode)
	}
	for _, k := range []string{"subtype", "is_error", "result", "num_turns", "total_cost_usd", "stop_reason", "terminal_reason", "permission_denials", "api_error_status"} {
		if !reflect.DeepEqual(a[k], s[k]) {
			t.Errorf("result.%s: argument %v, stdin %v", k, a[k], s[k])
		}
	}
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		if get(a, "usage", k) != get(s, "usage", k) {
			t.Errorf("result.usage.%s: argument %v, stdin %v", k, get(a, "usage", k), get(s, "usage", k))
		}
	}
	if got, want := s["total_cost_usd"].(float64), cliCost(t, stdin.model(), usage); math.Abs(got-want) > 1e-9 {
		t.Errorf("stdin total_cost_usd = %v, want %v", got, want)
	}
	if n := len(inRun.OfType("result")); n != 1 {
		t.Errorf("stdin run wrote %d results", n)
	}
	// 2.1.332 puts the git status, with each repository's own commit id,
	// in the first user message: compare with the ids replaced.
	ar, sr := arg.api.Requests(), stdin.api.Requests()
	if len(ar) != 1 || len(sr) != 1 {
		t.Fatalf("the fakes saw %d and %d requests, want 1 each", len(ar), len(sr))
	}
	argText := strings.ReplaceAll(ar[0].FirstUser().Text(), claudetest.Git(t, arg.dir, "rev-parse", "--short", "HEAD"), "HEAD")
	inText := strings.ReplaceAll(sr[0].FirstUser().Text(), claudetest.Git(t, stdin.dir, "rev-parse", "--short", "HEAD"), "HEAD")
	if argText != inText {
		t.Errorf("prompts sent: argument %q, stdin %q", argText, inText)
	}
	for _, b := range []struct {
		env *claudetest.Env
		res map[string]any
	}{{arg.env, a}, {stdin.env, s}} {
		lines := mainTranscript(t, b.env, b.res["session_id"].(string))
		ta := entries(lines, "assistant", "text")
		if len(ta) != 1 || get(ta[0], "message", "usage", "output_tokens") != 80.0 || blocksOf(ta[0], "text")[0]["text"] != "Hello from the fake API." {
			t.Errorf("transcript assistant lines: %v", ta)
		}
	}
}

func TestOverloadedClearsAfterRetry(t *testing.T) {
	b := newBed(t, fakeapi.Sequence(fakeapi.Error(529, "overloaded_error", "Overloaded"), fakeapi.Text("after 529")), claudetest.WithMaxRetries(2))
	run := b.run("Hi.")
	res := result(t, run)
	if run.ExitCode != 0 || res["is_error"] != false || res["result"] != "after 529" {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	if n := len(b.api.Requests()); n != 2 {
		t.Errorf("fake saw %d requests, want 2", n)
	}
	var retries int
	for _, s := range run.OfType("system") {
		if s["subtype"] == "api_retry" {
			retries++
			if s["error_status"] != 529.0 {
				t.Errorf("api_retry: %v", s)
			}
		}
	}
	if retries != 1 {
		t.Errorf("%d api_retry lines, want 1", retries)
	}
	if ta := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "text"); len(ta) != 1 || ta[0]["isApiErrorMessage"] != nil {
		t.Errorf("transcript assistant lines: %v", ta)
	}
}

func TestRateLimitRetryAfter(t *testing.T) {
	b := newBed(t, fakeapi.Sequence(
		fakeapi.Error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit").WithHeader("retry-after", "1"),
		fakeapi.Text("after 429"),
	), claudetest.WithMaxRetries(2))
	run := b.run("Hi.")
	res := result(t, run)
	if run.ExitCode != 0 || res["result"] != "after 429" {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	reqs := b.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("fake saw %d requests, want 2", len(reqs))
	}
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 900*time.Millisecond {
		t.Errorf("retry came %v after the 429, want about the 1 s retry-after", gap)
	}
	// 2.1.197 waits the retry-after exactly; 2.1.332 adds up to 25% jitter.
	maxDelay := 1010.0
	if claudetest.AtLeast(t, b.bin, "2.1.332") {
		maxDelay = 1250
	}
	for _, s := range run.OfType("system") {
		if s["subtype"] == "api_retry" {
			if d, _ := s["retry_delay_ms"].(float64); s["error_status"] != 429.0 || d < 990 || d > maxDelay {
				t.Errorf("api_retry: %v, want error_status 429 and retry_delay_ms 1000 to %v", s, maxDelay)
			}
		}
	}
	if ta := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "text"); len(ta) != 1 {
		t.Errorf("transcript assistant lines: %v", ta)
	}
}

// TestBrokenStreamIsRetried cuts the first response's stream short. The CLI
// sends the same request again: without streaming up to 2.1.197 (its
// non-streaming fallback), streaming again from 2.1.332 on.
func TestBrokenStreamIsRetried(t *testing.T) {
	b := newBed(t, fakeapi.Sequence(
		fakeapi.Text("this stream is cut off").BreakAfter(4),
		fakeapi.Text("answer from the fallback").WithUsage(fakeapi.Usage{Input: 10, Output: 5}),
	), claudetest.WithMaxRetries(1))
	run := b.run("Hi.")
	res := result(t, run)
	if run.ExitCode != 0 || res["is_error"] != false || res["result"] != "answer from the fallback" {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	retryStreams := claudetest.AtLeast(t, b.bin, "2.1.332")
	reqs := b.api.Requests()
	if len(reqs) != 2 || !reqs[0].Stream || reqs[1].Stream != retryStreams {
		t.Fatalf("%d requests (want 2, the retry streaming: %v): %v", len(reqs), retryStreams, reqs)
	}
	if !reflect.DeepEqual(reqs[0].Messages, reqs[1].Messages) {
		t.Error("the fallback request differs from the broken one")
	}
	// 2.1.197 bills the fallback only. 2.1.332 also bills what usage the
	// cut stream had reported when the break reached it, which depends on
	// timing: at most the whole of the cut response.
	got, want := res["total_cost_usd"].(float64), cliCost(t, b.model(), fakeapi.Usage{Input: 10, Output: 5})
	ceiling := want
	if retryStreams {
		ceiling += cliCost(t, b.model(), fakeapi.DefaultUsage)
	}
	if got < want-1e-9 || got > ceiling+1e-9 {
		t.Errorf("total_cost_usd = %v, want %v (the fallback) to %v", got, want, ceiling)
	}
	ta := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "text")
	if len(ta) != 1 || blocksOf(ta[0], "text")[0]["text"] != "answer from the fallback" {
		t.Errorf("transcript assistant lines: %v", ta)
	}
}

// TestParallelToolsAndEdit sends a thinking block, text and Read, Write and
// Bash as parallel calls in one response, then an Edit of the file read, and
// checks what came back.
func TestParallelToolsAndEdit(t *testing.T) {
	b := newBed(t, nil, claudetest.WithMaxRetries(1))
	readme, notes := filepath.Join(b.dir, "README.md"), filepath.Join(b.dir, "notes.txt")
	b.api.SetHandler(fakeapi.Turns(
		fakeapi.ToolUse(
			fakeapi.Read(readme).WithID("toolu_fake_read"),
			fakeapi.Write(notes, "note\n").WithID("toolu_fake_write"),
			fakeapi.Bash("echo parallel-ok").WithID("toolu_fake_bash"),
		).WithText("Three things at once.").WithThinking("Read, write and run in parallel."),
		fakeapi.ToolUse(fakeapi.Edit(readme, "# test repo", "# edited repo")),
		fakeapi.Text("all done"),
	))
	run := b.run("Do three things.", "--permission-mode", "bypassPermissions", "--max-turns", "6")

	res := result(t, run)
	if run.ExitCode != 0 || res["result"] != "all done" {
		t.Fatalf("exit %d, result %v", run.ExitCode, res)
	}
	if got, _ := os.ReadFile(readme); string(got) != "# edited repo\n" {
		t.Errorf("README.md = %q", got)
	}
	if got, _ := os.ReadFile(notes); string(got) != "note\n" {
		t.Errorf("notes.txt = %q", got)
	}
	reqs := b.api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("fake saw %d requests, want 3", len(reqs))
	}
	results := reqs[1].ToolResults()
	if len(results) != 3 {
		t.Fatalf("second request carries %d tool_results, want 3 in one user message: %+v", len(results), results)
	}
	for id, want := range map[string]string{"toolu_fake_read": "# test repo", "toolu_fake_write": "notes.txt", "toolu_fake_bash": "parallel-ok"} {
		if tr, ok := reqs[1].ToolResult(id); !ok || tr.IsError || !strings.Contains(tr.Content, want) {
			t.Errorf("tool_result %s = %+v, want it to contain %q", id, tr, want)
		}
	}
	if tr := reqs[2].ToolResults(); len(tr) != 1 || tr[0].IsError {
		t.Errorf("Edit tool_result: %+v", tr)
	}

	// stdout: one assistant line per block, all with the same message id.
	ids := map[any]int{}
	for _, a := range run.OfType("assistant") {
		ids[get(a, "message", "id")]++
	}
	if len(ids) != 3 || len(run.OfType("assistant")) != 7 || len(run.OfType("user")) != 4 {
		t.Errorf("stdout: %d assistant lines over %d message ids, %d user lines", len(run.OfType("assistant")), len(ids), len(run.OfType("user")))
	}
	lines := mainTranscript(t, b.env, res["session_id"].(string))
	if n := len(entries(lines, "user", "tool_result")); n != 4 {
		t.Errorf("transcript has %d tool_result lines, want 4", n)
	}
	if n := len(entries(lines, "assistant", "tool_use")); n != 4 {
		t.Errorf("transcript has %d tool_use lines, want 4", n)
	}
	th := entries(lines, "assistant", "thinking")
	if len(th) != 1 || blocksOf(th[0], "thinking")[0]["thinking"] != "Read, write and run in parallel." {
		t.Errorf("transcript thinking lines: %v", th)
	}
}

// TestHangThenRetry: a request that never answers is dropped by the CLI after
// API_TIMEOUT_MS and retried; the retry succeeds.
func TestHangThenRetry(t *testing.T) {
	b := newBed(t, fakeapi.Sequence(fakeapi.Hang(), fakeapi.Text("after the hang")),
		claudetest.WithMaxRetries(1), claudetest.WithVar("API_TIMEOUT_MS", "2000"))
	run := b.run("Hi.")
	res := result(t, run)
	if run.ExitCode != 0 || res["result"] != "after the hang" {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	reqs := b.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("fake saw %d requests, want 2", len(reqs))
	}
	if gap := reqs[1].Time.Sub(reqs[0].Time); gap < 2*time.Second {
		t.Errorf("retry %v after the hung request, want at least API_TIMEOUT_MS (2 s)", gap)
	}
	var retries []map[string]any
	for _, s := range run.OfType("system") {
		if s["subtype"] == "api_retry" {
			retries = append(retries, s)
		}
	}
	if len(retries) != 1 || retries[0]["error_status"] != nil {
		t.Errorf("api_retry lines: %v", retries)
	}
	if ta := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "text"); len(ta) != 1 {
		t.Errorf("transcript assistant lines: %v", ta)
	}
}

// TestShouldRetryFalse: x-should-retry: false stops the CLI's retries at once.
func TestShouldRetryFalse(t *testing.T) {
	b := newBed(t, fakeapi.Sequence(fakeapi.Error(500, "api_error", "no retry").WithHeader("x-should-retry", "false")), claudetest.WithMaxRetries(3))
	run := b.run("Hi.")
	res := result(t, run)
	if run.ExitCode != 1 || res["is_error"] != true || res["api_error_status"] != 500.0 {
		t.Errorf("exit %d, result %v", run.ExitCode, res)
	}
	if n := len(b.api.Requests()); n != 1 {
		t.Errorf("fake saw %d requests, want 1 (no retry)", n)
	}
	errs := entries(mainTranscript(t, b.env, res["session_id"].(string)), "assistant", "")
	if len(errs) != 1 || errs[0]["isApiErrorMessage"] != true {
		t.Errorf("transcript assistant lines: %v", errs)
	}
}
