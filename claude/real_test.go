//go:build unix

package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// These tests drive the pinned real CLI (PNEUMA_TEST_CLAUDE) against the
// fake Anthropic API on loopback.

// startReal starts the real CLI in a fresh HOME, working in dir.
func startReal(t *testing.T, api *fakeapi.Server, dir string, opts Options, onControl func(context.Context, *ControlRequest) ControlResponse) *Process {
	t.Helper()
	return startRealCfg(t, api, dir, opts, onControl, nil)
}

// startRealEnv is startReal with extra environment variables.
func startRealEnv(t *testing.T, api *fakeapi.Server, dir string, opts Options, env ...string) *Process {
	t.Helper()
	return startRealCfg(t, api, dir, opts, nil, env)
}

func startRealCfg(t *testing.T, api *fakeapi.Server, dir string, opts Options, onControl func(context.Context, *ControlRequest) ControlResponse, extraEnv []string) *Process {
	t.Helper()
	bin := realCLI(t)
	checkNoLeaks(t)
	env := []string{
		"HOME=" + t.TempDir(),
		"PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=sk-test",
		"ANTHROPIC_BASE_URL=" + api.URL,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
	env = append(env, extraEnv...)
	var stderr syncBuffer
	p, err := Start(context.Background(), Config{Binary: bin, Dir: dir, Env: env, Options: opts, Stderr: &stderr, OnControl: onControl})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		drainAll(p)
		p.Wait()
		if t.Failed() {
			t.Logf("claude stderr:\n%s", stderr.String())
		}
	})
	return p
}

func TestRealCLITurn(t *testing.T) {
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("Hello from the fake API.")))
	const sid = "5d3f8a0e-9c1b-4e7a-8f2d-1a2b3c4d5e6f"
	p := startReal(t, api, t.TempDir(), Options{SessionID: sid, MaxTurns: 3, Tools: []string{"Read", "Write"},
		AllowedTools: []string{"Bash(git status:*)", "Read"}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	drained := make(chan []Event, 1)
	resp, err := p.Initialize(ctx, InitializeRequest{})
	if err != nil {
		t.Fatalf("Initialize() error: %v", err)
	}
	var init struct {
		Pid int `json:"pid"`
	}
	if json.Unmarshal(resp, &init) != nil || init.Pid == 0 {
		t.Errorf("initialize response = %.200s", resp)
	}
	if err := p.SendUser("Say hello."); err != nil {
		t.Fatal(err)
	}
	evs := until(t, p, TypeResult)
	p.CloseInput()
	go func() { drained <- drainAll(p) }()
	st := wait(t, p)
	<-drained

	var gotInit *Init
	for _, ev := range evs {
		if ev.Type == TypeInvalid || ev.Type == TypeOversized {
			t.Errorf("undecodable line: %v", ev.Err)
		}
		if ev.Init != nil {
			gotInit = ev.Init
		}
	}
	if gotInit == nil || gotInit.SessionID != sid || gotInit.Version != claudetest.PinnedVersion(t, realCLI(t)) {
		t.Fatalf("init = %+v", gotInit)
	}
	if tools := slices.Sorted(slices.Values(gotInit.Tools)); !slices.Equal(tools, []string{"Read", "Write"}) {
		t.Errorf("init tools = %q, want the --tools set", gotInit.Tools)
	}
	res := evs[len(evs)-1].Result
	if res.IsError || res.Result != "Hello from the fake API." || res.SessionID != sid || res.TotalCostUSD <= 0 {
		t.Errorf("result = %+v", res)
	}
	if st.Code != 0 || st.InvalidLines != 0 {
		t.Errorf("status = %+v", st)
	}
}

// The can_use_tool control request end to end: the CLI asks, pneuma allows
// with a rewritten input (an allow must carry updatedInput), and the CLI runs
// the rewritten call (docs/claude-cli.md, sections 3.4 and 5).
func TestRealCLICanUseToolAllowRewrites(t *testing.T) {
	cwd := t.TempDir()
	api := fakeapi.New(t, fakeapi.Sequence(
		fakeapi.ToolUse(fakeapi.Write(filepath.Join(cwd, "orig.txt"), "orig\n")),
		fakeapi.Text("done"),
	))
	asked := make(chan *ControlRequest, 4)
	p := startReal(t, api, cwd, Options{MaxTurns: 4, PermissionPromptStdio: true, PermissionMode: "default"},
		func(_ context.Context, req *ControlRequest) ControlResponse {
			asked <- req
			if req.Subtype != ControlCanUseTool {
				return ControlResponse{}
			}
			in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(cwd, "changed.txt"), "content": "rewritten by pneuma\n"})
			return Allow(in)
		})
	p.SendUser("Write the file.")
	evs := until(t, p, TypeResult)
	p.CloseInput()
	go drainAll(p)
	st := wait(t, p)

	select {
	case req := <-asked:
		if req.ToolName != "Write" || !strings.Contains(string(req.Input), "orig.txt") {
			t.Errorf("can_use_tool request = %+v", req)
		}
	default:
		t.Fatal("no control request reached OnControl")
	}
	data, err := os.ReadFile(filepath.Join(cwd, "changed.txt"))
	if err != nil || string(data) != "rewritten by pneuma\n" {
		t.Errorf("changed.txt = %q, %v; the CLI did not run the updated input", data, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "orig.txt")); err == nil {
		t.Error("orig.txt was written: the original input ran")
	}
	if res := evs[len(evs)-1].Result; res.IsError || len(res.PermissionDenials) != 0 || st.Code != 0 {
		t.Errorf("result = %+v, status %+v", res, st)
	}
}

// Stop on a turn waiting for an API that never answers: the interrupt and the
// EOF after it end the CLI without any signal. Its exit code follows the last
// result (error_during_execution), so it is 1, unlike after SIGINT.
func TestRealCLIStopGracefully(t *testing.T) {
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Hang()))
	p := startReal(t, api, t.TempDir(), Options{MaxTurns: 2}, nil)
	p.SendUser("Take your time.")
	until(t, p, TypeSystem)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := api.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	drained := make(chan []Event, 1)
	go func() { drained <- drainAll(p) }()
	start := time.Now()
	if err := p.Stop(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := wait(t, p)
	evs := <-drained
	var res *Result
	for _, ev := range evs {
		if ev.Result != nil {
			res = ev.Result
		}
	}
	if res == nil || res.Subtype != "error_during_execution" || st.Signal != "" || st.Code != 1 {
		t.Errorf("result %+v, status %+v after %v (events %s)", res, st, took, types(evs))
	}
	if took > 5*time.Second {
		t.Errorf("Stop() needed %v: the interrupt did not end the process", took)
	}
}

// --tools "" (Options.Tools non-nil and empty) offers the model no tools.
func TestRealCLINoTools(t *testing.T) {
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("no tools")))
	p := startReal(t, api, t.TempDir(), Options{Tools: []string{}, MaxTurns: 1}, nil)
	p.SendUser("hi")
	evs := until(t, p, TypeResult)
	p.CloseInput()
	go drainAll(p)
	wait(t, p)
	reqs := api.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d API requests, want 1", len(reqs))
	}
	if len(reqs[0].Tools) != 0 {
		t.Errorf("tools offered = %q, want none", reqs[0].Tools)
	}
	if res := evs[len(evs)-1].Result; res.IsError {
		t.Errorf("result = %+v", res)
	}
}

// A background process started by a Bash tool is in the CLI's process
// group: Wait kills it once the CLI has exited. Not `sleep 300 &`: CLI 2.1.332
// blocks a long sleep followed by other commands.
func TestRealCLIBackgroundToolKilled(t *testing.T) {
	api := fakeapi.New(t, fakeapi.Sequence(
		fakeapi.ToolUse(fakeapi.Bash("tail -f /dev/null >/dev/null 2>&1 & echo bgpid=$!")),
		fakeapi.Text("done"),
	))
	p := startRealEnv(t, api, t.TempDir(), Options{MaxTurns: 3, PermissionMode: "bypassPermissions"}, "IS_SANDBOX=1")
	p.SendUser("Start it.")
	evs := until(t, p, TypeResult)
	p.CloseInput()
	go drainAll(p)
	wait(t, p)
	pid := 0
	for _, ev := range evs {
		if ev.Type != TypeUser || ev.Message == nil {
			continue
		}
		// The raw content, whatever its shape: a string (2.1.197) or a list
		// of blocks (2.1.332).
		for _, b := range ev.Message.Content {
			text := string(b.Content)
			var s string
			if json.Unmarshal(b.Content, &s) == nil {
				text = s
			}
			if i := strings.Index(text, "bgpid="); i >= 0 {
				fmt.Sscanf(text[i:], "bgpid=%d", &pid)
			}
		}
	}
	if pid == 0 {
		t.Fatalf("no bgpid in the tool results: %s", types(evs))
	}
	if alive(t, pid) {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		t.Errorf("background tool process %d outlived the CLI (claude pid %d): %s", pid, p.Pid(), stat)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// Stop while a can_use_tool waits for pneuma's answer: the CLI cancels the
// request (control_cancel_request), which cancels OnControl's context, and
// the interrupted turn ends the process without a signal.
func TestRealCLIStopDuringPermissionPrompt(t *testing.T) {
	cwd := t.TempDir()
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.ToolUse(fakeapi.Write(filepath.Join(cwd, "a.txt"), "x\n"))))
	asked := make(chan struct{}, 1)
	handlerCancelled := false
	p := startReal(t, api, cwd, Options{MaxTurns: 3, PermissionPromptStdio: true},
		func(ctx context.Context, req *ControlRequest) ControlResponse {
			asked <- struct{}{}
			<-ctx.Done()
			handlerCancelled = true
			return Deny("stopped by pneuma", true)
		})
	p.SendUser("Write the file.")
	drained := make(chan []Event, 1)
	go func() { drained <- drainAll(p) }()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("no permission prompt within 30s")
	}
	start := time.Now()
	if err := p.Stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st := wait(t, p)
	evs := <-drained
	cancelled := false
	var res *Result
	for _, ev := range evs {
		cancelled = cancelled || ev.CancelRequestID != ""
		if ev.Result != nil {
			res = ev.Result
		}
	}
	if !cancelled || !handlerCancelled {
		t.Errorf("control_cancel_request seen %v, OnControl cancelled %v; events %s", cancelled, handlerCancelled, types(evs))
	}
	if res == nil || res.Subtype != "error_during_execution" || st.Signal != "" || took > 5*time.Second {
		t.Errorf("result %+v, status %+v after %v", res, st, took)
	}
	if _, err := os.Stat(filepath.Join(cwd, "a.txt")); err == nil {
		t.Error("the tool ran although permission was never granted")
	}
}

// The CLI answers mcp_status before the first user message, without an API
// call: a server whose command does not exist is failed (with the spawn
// error, in the first answer in every run so far); one that has not
// answered yet is pending.
func TestRealCLIMCPStatusBeforeFirstPrompt(t *testing.T) {
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("unused")))
	p := startReal(t, api, t.TempDir(), Options{MCPConfig: `{"mcpServers":{"gone":{"command":"/nonexistent/pneuma-mcp"},"slow":{"command":"sleep","args":["30"]}}}`}, nil)
	go drainAll(p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[string]MCPServer{}
	for got["gone"].Status == "" || got["gone"].Status == "pending" { // bounded by ctx
		servers, err := p.MCPStatus(ctx)
		if err != nil {
			t.Fatalf("MCPStatus() error: %v", err)
		}
		for _, s := range servers {
			got[s.Name] = s
		}
	}
	if g := got["gone"]; g.Status != "failed" || !strings.Contains(g.Error, "ENOENT") {
		t.Errorf("gone: %+v", g)
	}
	if s := got["slow"]; s.Status != "pending" {
		t.Errorf("slow: %+v", s)
	}
	if n := len(api.Requests()); n != 0 {
		t.Errorf("%d API requests before the first prompt", n)
	}
}
