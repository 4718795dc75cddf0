package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// syncBuffer is a bytes.Buffer safe to read while the process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type fakeRun struct {
	p      *Process
	bin    string
	stream *syncBuffer
	stderr *syncBuffer
}

// startFake starts the fake CLI playing s. It checks, when the test ends,
// that Wait was called and that no goroutine of the package is left behind.
func startFake(t *testing.T, s fakecli.Scenario, mod func(*Config)) *fakeRun {
	t.Helper()
	checkNoLeaks(t)
	bin := fakecli.Install(t, s)
	r := &fakeRun{bin: bin, stream: &syncBuffer{}, stderr: &syncBuffer{}}
	cfg := Config{
		Binary:  bin,
		Dir:     t.TempDir(),
		Env:     []string{"PATH=" + os.Getenv("PATH"), "PNEUMA_TEST_MARK=1"},
		Options: Options{Model: "sonnet", MaxTurns: 5},
		Stream:  r.stream,
		Stderr:  r.stderr,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start() error: %v", err)
	}
	r.p = p
	t.Cleanup(func() {
		p.Kill()
		for range p.Events() {
		}
		p.Wait()
	})
	return r
}

// checkNoLeaks fails the test if, once it and its cleanups are done, more
// goroutines run than before it started.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		poll.Until(3*time.Second, func() bool { return runtime.NumGoroutine() <= before })
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines leaked:\n%s", n-before, buf[:runtime.Stack(buf, true)])
		}
	})
}

// eventTimeout bounds every wait for the CLI (the real one starts slowly on a
// busy CI machine); only a failing test waits that long.
const eventTimeout = 30 * time.Second

// until reads events up to and including the first one of type typ.
func until(t *testing.T, p *Process, typ string) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(eventTimeout)
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				t.Fatalf("events closed before a %q event; got %s", typ, types(evs))
			}
			evs = append(evs, ev)
			if ev.Type == typ {
				return evs
			}
		case <-timeout:
			t.Fatalf("no %q event within %v; got %s", typ, eventTimeout, types(evs))
		}
	}
}

// rest reads every remaining event.
func rest(t *testing.T, p *Process) []Event {
	t.Helper()
	var evs []Event
	timeout := time.After(eventTimeout)
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				return evs
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatalf("events not closed within %v; got %s", eventTimeout, types(evs))
		}
	}
}

// drainAll reads every remaining event; for goroutines, which must not fail
// the test (wait bounds them).
func drainAll(p *Process) []Event {
	var evs []Event
	for ev := range p.Events() {
		evs = append(evs, ev)
	}
	return evs
}

func types(evs []Event) string {
	var s []string
	for _, ev := range evs {
		if ev.Type == TypeSystem {
			s = append(s, ev.Type+"/"+ev.Subtype)
		} else {
			s = append(s, ev.Type)
		}
	}
	return "[" + strings.Join(s, " ") + "]"
}

func wait(t *testing.T, p *Process) ExitStatus {
	t.Helper()
	done := make(chan struct{})
	var st ExitStatus
	var err error
	go func() {
		st, err = p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(eventTimeout):
		t.Fatal("Wait() did not return within the event timeout")
	}
	if err != nil {
		t.Fatalf("Wait() error: %v", err)
	}
	return st
}

func TestProcessTurn(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Env: []string{"PNEUMA_TEST_MARK", "HOME", MarkerEnv}}, func(c *Config) {
		c.Options.SessionID = "0b5c6a52-3a3c-4d61-9f6b-2f3b5f1f2e11"
	})
	if err := r.p.SendUser("hello"); err != nil {
		t.Fatal(err)
	}
	evs := until(t, r.p, TypeResult)
	if err := r.p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	evs = append(evs, rest(t, r.p)...)
	st := wait(t, r.p)

	if got := types(evs); got != "[system/init assistant result]" {
		t.Fatalf("events = %s", got)
	}
	if evs[0].Init.SessionID != "0b5c6a52-3a3c-4d61-9f6b-2f3b5f1f2e11" || evs[2].Result.IsError || evs[2].Result.TotalCostUSD != 0.001 {
		t.Errorf("init %+v result %+v", evs[0].Init, evs[2].Result)
	}
	if st != (ExitStatus{Code: 0, Lines: 3}) {
		t.Errorf("status = %+v", st)
	}
	calls := fakecli.Calls(t, r.bin)
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	wantArgs := Options{Model: "sonnet", MaxTurns: 5, SessionID: "0b5c6a52-3a3c-4d61-9f6b-2f3b5f1f2e11"}.Args()
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("argv = %q, want %q", c.Args, wantArgs)
	}
	if c.Env["PNEUMA_TEST_MARK"] != "1" || c.Env["HOME"] != "" || !strings.HasPrefix(c.Env[MarkerEnv], "pneuma_") {
		t.Errorf("env = %v, want the configured environment plus the marker", c.Env)
	}
	wantIn := []string{`{"type":"user","message":{"role":"user","content":"hello"},"parent_tool_use_id":null,"session_id":""}`}
	if !slices.Equal(c.Stdin, wantIn) {
		t.Errorf("stdin = %q, want %q", c.Stdin, wantIn)
	}
	var lines []string
	for _, l := range strings.SplitAfter(r.stream.String(), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 || !strings.Contains(lines[1], `"text":"ok"`) {
		t.Errorf("stream = %q", r.stream.String())
	}
}

func TestHugeLine(t *testing.T) {
	size := 20 << 20
	decodeSize := size
	if raceEnabled {
		decodeSize = 4 << 20 // decoding 20 MB under -race takes ~20 s on a busy CI core
	}
	bigTurn := func(n int) fakecli.Scenario {
		return fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
			{Line: fakecli.InitLine("{{session}}")},
			{BigLine: n},
			{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
		}}}}
	}
	t.Run("decoded", func(t *testing.T) {
		size := decodeSize
		r := startFake(t, bigTurn(size), nil)
		r.p.SendUser("big")
		evs := until(t, r.p, TypeResult)
		r.p.CloseInput()
		rest(t, r.p)
		st := wait(t, r.p)
		if got := types(evs); got != "[system/init assistant result]" {
			t.Fatalf("events = %s", got)
		}
		big := evs[1]
		if big.Err != nil || big.Size != size || len(big.Message.Content[0].Text) < size-400 {
			t.Errorf("big line: size %d err %v", big.Size, big.Err)
		}
		if st.Lines != 3 || st.SkippedLines != 0 {
			t.Errorf("status = %+v", st)
		}
		if n := len(r.stream.String()); n < size {
			t.Errorf("stream holds %d bytes, want all of the %d byte line", n, size)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		r := startFake(t, bigTurn(size), func(c *Config) { c.MaxLineBytes = 1 << 20 })
		r.p.SendUser("big")
		evs := until(t, r.p, TypeResult)
		r.p.CloseInput()
		rest(t, r.p)
		st := wait(t, r.p)
		if got := types(evs); got != "[system/init oversized result]" {
			t.Fatalf("events = %s", got)
		}
		if evs[1].Size != size || evs[1].Err == nil {
			t.Errorf("oversized event = %+v", evs[1])
		}
		if st.Lines != 3 || st.SkippedLines != 1 || st.InvalidLines != 0 {
			t.Errorf("status = %+v", st)
		}
		if n := len(r.stream.String()); n < size {
			t.Errorf("stream holds %d bytes, want the oversized line too", n)
		}
	})
}

func TestInvalidLinesAndTornLastLine(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: "Warning: something printed to stdout"},
		{Line: fakecli.AssistantText("{{session}}", "msg_1", "still going")},
		{Raw: `{"type":"assistant","message":{"id":"msg_2","content":[{"type":"text","text":"cut he`},
		fakecli.Exit(3),
	}}}}, nil)
	r.p.SendUser("go")
	evs := rest(t, r.p)
	st := wait(t, r.p)
	if got := types(evs); got != "[system/init invalid assistant invalid]" {
		t.Fatalf("events = %s", got)
	}
	if !strings.Contains(evs[3].Err.Error(), "incomplete last line") {
		t.Errorf("torn line error = %v", evs[3].Err)
	}
	if st.Code != 3 || st.Lines != 4 || st.InvalidLines != 2 {
		t.Errorf("status = %+v", st)
	}
	if !strings.HasSuffix(r.stream.String(), `"text":"cut he`) {
		t.Errorf("stream does not end with the torn bytes: %q", r.stream.String())
	}
}

func TestUsageErrorExit(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Start: []fakecli.Step{
		{Stderr: "Error: Session ID 0b5c is already in use.\n"},
		fakecli.Exit(1),
	}}, nil)
	evs := rest(t, r.p)
	st := wait(t, r.p)
	if len(evs) != 0 || st.Code != 1 || !strings.Contains(r.stderr.String(), "already in use") {
		t.Errorf("events %s, status %+v, stderr %q", types(evs), st, r.stderr.String())
	}
	if err := r.p.SendUser("late"); !errors.Is(err, ErrInputClosed) {
		t.Errorf("SendUser() after exit = %v, want ErrInputClosed", err)
	}
}

func TestWriteAfterCloseInput(t *testing.T) {
	r := startFake(t, fakecli.Scenario{}, nil)
	if err := r.p.CloseInput(); err != nil {
		t.Fatal(err)
	}
	if err := r.p.CloseInput(); err != nil {
		t.Errorf("second CloseInput() = %v", err)
	}
	if err := r.p.SendUser("x"); !errors.Is(err, ErrInputClosed) {
		t.Errorf("SendUser() = %v, want ErrInputClosed", err)
	}
	if err := r.p.Interrupt(); !errors.Is(err, ErrInputClosed) {
		t.Errorf("Interrupt() = %v, want ErrInputClosed", err)
	}
	rest(t, r.p)
	if st := wait(t, r.p); st.Code != 0 || st.Lines != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestInterrupt(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{SleepMS: 30000},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
	}}}}, nil)
	r.p.SendUser("long task")
	until(t, r.p, TypeSystem)
	start := time.Now()
	if err := r.p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	evs := until(t, r.p, TypeResult)
	if time.Since(start) > 5*time.Second {
		t.Errorf("interrupt took %v", time.Since(start))
	}
	if got := types(evs); got != "[control_response user result]" {
		t.Fatalf("events = %s", got)
	}
	if evs[0].Reply.Subtype != "success" || evs[2].Result.Subtype != "error_during_execution" {
		t.Errorf("reply %+v result %+v", evs[0].Reply, evs[2].Result)
	}
	// The process survives an interrupt: a new turn works.
	r.p.SendUser("again")
	evs = until(t, r.p, TypeResult)
	if evs[len(evs)-1].Result.IsError {
		t.Errorf("second turn result = %+v", evs[len(evs)-1].Result)
	}
	r.p.CloseInput()
	rest(t, r.p)
	wait(t, r.p)
	in := fakecli.Calls(t, r.bin)[0].Stdin
	var req struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
		Request   struct {
			Subtype string `json:"subtype"`
		} `json:"request"`
	}
	if len(in) != 3 || json.Unmarshal([]byte(in[1]), &req) != nil || req.Type != "control_request" ||
		req.Request.Subtype != "interrupt" || req.RequestID == "" || evs == nil {
		t.Errorf("stdin = %q", in)
	}
}

func TestInitialize(t *testing.T) {
	r := startFake(t, fakecli.Scenario{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Drain events while Initialize waits, as a caller must.
	drained := make(chan []Event)
	go func() {
		var evs []Event
		for ev := range r.p.Events() {
			evs = append(evs, ev)
		}
		drained <- evs
	}()
	resp, err := r.p.Initialize(ctx, InitializeRequest{Hooks: map[string][]HookMatcher{
		"PreToolUse": {{Matcher: "Bash", HookCallbackIDs: []string{"hook_0"}, Timeout: 30}},
	}})
	if err != nil {
		t.Fatalf("Initialize() error: %v", err)
	}
	if !bytes.Contains(resp, []byte(fmt.Sprintf(`"pid":%d`, r.p.Pid()))) {
		t.Errorf("response = %s", resp)
	}
	r.p.CloseInput()
	<-drained
	wait(t, r.p)
	in := fakecli.Calls(t, r.bin)[0].Stdin
	if len(in) != 1 || !strings.Contains(in[0], `"request":{"subtype":"initialize","hooks":{"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["hook_0"],"timeout":30}]}}`) {
		t.Errorf("stdin = %q", in)
	}
}

func TestInitializeFailsWhenCLIExits(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Start: []fakecli.Step{fakecli.Exit(1)}}, nil)
	go func() {
		for range r.p.Events() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.p.Initialize(ctx, InitializeRequest{}); err == nil || ctx.Err() != nil {
		t.Errorf("Initialize() = %v (ctx %v), want an error before the deadline", err, ctx.Err())
	}
	wait(t, r.p)
}

func TestCanUseTool(t *testing.T) {
	input := map[string]any{"file_path": "/home/me/proj/orig.txt", "content": "orig\n"}
	scenario := fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ToolUseLine("{{session}}", "msg_1", "toolu_1", "Write", input)},
		{Line: fakecli.CanUseToolLine("6333450e-366e-4db3-8b3a-ac791303a0dd", "Write", "toolu_1", input)},
		{AwaitResponse: "6333450e-366e-4db3-8b3a-ac791303a0dd"},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
	}}}}
	tests := []struct {
		name      string
		onControl func(context.Context, *ControlRequest) ControlResponse
		want      string
	}{
		{"allow with updated input", func(_ context.Context, req *ControlRequest) ControlResponse {
			if req.ToolName != "Write" || req.ToolUseID != "toolu_1" {
				return ControlError("unexpected request")
			}
			return Allow(json.RawMessage(`{"file_path":"/home/me/proj/changed.txt","content":"rewritten\n"}`))
		}, `"response":{"behavior":"allow","updatedInput":{"file_path":"/home/me/proj/changed.txt","content":"rewritten\n"},"toolUseID":"toolu_1"}`},
		{"allow echoes input", func(context.Context, *ControlRequest) ControlResponse { return Allow(nil) },
			`"response":{"behavior":"allow","updatedInput":{"content":"orig\n","file_path":"/home/me/proj/orig.txt"},"toolUseID":"toolu_1"}`},
		{"no handler denies", nil, `"response":{"behavior":"deny","message":"` + defaultDenyMessage + `","toolUseID":"toolu_1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startFake(t, scenario, func(c *Config) {
				c.Options.PermissionPromptStdio = true
				c.OnControl = tt.onControl
			})
			r.p.SendUser("write it")
			evs := until(t, r.p, TypeResult)
			r.p.CloseInput()
			rest(t, r.p)
			wait(t, r.p)
			if got := types(evs); got != "[system/init assistant control_request result]" {
				t.Fatalf("events = %s", got)
			}
			in := fakecli.Calls(t, r.bin)[0].Stdin
			want := `{"type":"control_response","response":{"subtype":"success","request_id":"6333450e-366e-4db3-8b3a-ac791303a0dd",` + tt.want + `}}`
			if len(in) != 2 || in[1] != want {
				t.Errorf("stdin = %q\nwant response %s", in, want)
			}
		})
	}
}

func TestControlCancelCancelsHandler(t *testing.T) {
	input := map[string]any{"command": "ls"}
	handlerDone := make(chan error, 1)
	r := startFake(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		{Line: fakecli.CanUseToolLine("req_c", "Bash", "toolu_c", input)},
		{Line: `{"type":"control_cancel_request","request_id":"req_c"}`},
		{AwaitResponse: "req_c"},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
	}}}}, func(c *Config) {
		c.OnControl = func(ctx context.Context, req *ControlRequest) ControlResponse {
			select {
			case <-ctx.Done():
				handlerDone <- nil
				return Deny("cancelled", false)
			case <-time.After(10 * time.Second):
				handlerDone <- errors.New("handler not cancelled")
				return Allow(nil)
			}
		}
	})
	r.p.SendUser("go")
	until(t, r.p, TypeResult)
	if err := <-handlerDone; err != nil {
		t.Error(err)
	}
	r.p.CloseInput()
	rest(t, r.p)
	wait(t, r.p)
}

func TestStop(t *testing.T) {
	const grace = 300 * time.Millisecond
	hangAfterResult := []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
		{Hang: true},
	}
	tests := []struct {
		name     string
		start    []fakecli.Step
		turn     []fakecli.Step
		closeIn  bool // CloseInput before Stop
		wantCode int
		wantSig  string
		min, max time.Duration
	}{
		// The fake answers the interrupt and exits at the EOF that follows.
		{"interrupt and eof", nil, []fakecli.Step{{Line: fakecli.InitLine("{{session}}")}, {SleepMS: 30000}},
			false, 0, "", 0, grace},
		// Wedged after its result: the interrupt goes unanswered, SIGINT ends it (exit 0, as the real CLI).
		{"hang after result", nil, hangAfterResult, false, 0, "", grace, 2 * grace},
		{"hang before any output", nil, []fakecli.Step{{Hang: true}}, false, 0, "", grace, 2 * grace},
		{"stdin already closed goes to SIGINT", nil, hangAfterResult, true, 0, "", 0, grace},
		{"ignored SIGINT escalates to SIGTERM", []fakecli.Step{{IgnoreSignals: []string{"SIGINT"}}}, hangAfterResult,
			false, -1, "SIGTERM", 2 * grace, 3 * grace},
		{"ignored SIGINT and SIGTERM escalate to SIGKILL", []fakecli.Step{{IgnoreSignals: []string{"SIGINT", "SIGTERM"}}},
			hangAfterResult, false, -1, "SIGKILL", 3 * grace, 4 * grace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startFake(t, fakecli.Scenario{Start: tt.start, Turns: []fakecli.Turn{{Steps: tt.turn}}}, nil)
			r.p.SendUser("go")
			if tt.turn[0].Line != "" {
				until(t, r.p, TypeSystem)
			} else {
				waitStdin(t, r.bin, 1)
			}
			if tt.closeIn {
				until(t, r.p, TypeResult)
				r.p.CloseInput()
			}
			drained := make(chan []Event)
			go func() { drained <- drainAll(r.p) }()
			start := time.Now()
			if err := r.p.Stop(context.Background(), grace); err != nil {
				t.Fatalf("Stop() error: %v", err)
			}
			took := time.Since(start)
			select {
			case <-r.p.Exited():
			default:
				t.Fatal("Stop() returned before the process exited")
			}
			st := wait(t, r.p)
			<-drained
			if st.Code != tt.wantCode || st.Signal != tt.wantSig {
				t.Errorf("status = %+v, want code %d signal %q", st, tt.wantCode, tt.wantSig)
			}
			if took < tt.min || took > tt.max+grace/2 {
				t.Errorf("Stop() took %v, want %v..%v", took, tt.min, tt.max)
			}
		})
	}
}

func TestStopContextForcesKill(t *testing.T) {
	r := startFake(t, fakecli.Scenario{Start: []fakecli.Step{{IgnoreSignals: []string{"SIGINT", "SIGTERM"}}},
		Turns: []fakecli.Turn{{Steps: []fakecli.Step{{Line: fakecli.InitLine("{{session}}")}, {Hang: true}}}}}, nil)
	r.p.SendUser("go")
	until(t, r.p, TypeSystem)
	go drainAll(r.p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := r.p.Stop(ctx, time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("Stop() = %v after %v, want the deadline error soon", err, time.Since(start))
	}
	if st := wait(t, r.p); st.Signal != "SIGKILL" {
		t.Errorf("status = %+v", st)
	}
}

func TestKill(t *testing.T) {
	r := startFake(t, fakecli.Scenario{}, nil)
	if err := r.p.Kill(); err != nil {
		t.Fatal(err)
	}
	rest(t, r.p)
	if st := wait(t, r.p); st.Signal != "SIGKILL" || st.Code != -1 {
		t.Errorf("status = %+v", st)
	}
	if err := r.p.Kill(); err != nil {
		t.Errorf("Kill() after exit = %v", err)
	}
	if err := r.p.Stop(context.Background(), time.Second); err != nil {
		t.Errorf("Stop() after exit = %v", err)
	}
}

// A tool the CLI started keeps stdout open after the CLI exits: Wait must
// still return promptly, with every line, and nothing may survive, even a
// process in a session of its own (as Claude Code runs Bash commands).
func TestGrandchildHoldingStdout(t *testing.T) {
	for _, detached := range []bool{false, true} {
		t.Run(fmt.Sprintf("detached=%v", detached), func(t *testing.T) { testGrandchild(t, detached) })
	}
}

func testGrandchild(t *testing.T, detached bool) {
	r := startFake(t, fakecli.Scenario{Turns: []fakecli.Turn{{Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Grandchild: true, Detached: detached},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{})},
		fakecli.Exit(0),
	}}}}, nil)
	r.p.SendUser("go")
	start := time.Now()
	evs := rest(t, r.p)
	st := wait(t, r.p)
	if took := time.Since(start); took >= drainTimeout {
		t.Errorf("Wait() took %v: the grandchild held stdout until the drain timeout", took)
	}
	if got := types(evs); got != "[system/init result]" || st.Code != 0 {
		t.Errorf("events %s status %+v", got, st)
	}
	gc := fakecli.Calls(t, r.bin)[0].Grandchildren
	if len(gc) != 1 {
		t.Fatalf("grandchildren = %v", gc)
	}
	if alive(t, gc[0]) {
		t.Errorf("grandchild %d outlived Wait", gc[0])
	}
	// Waiting twice, and concurrently, gives the same answer.
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if st2, err := r.p.Wait(); st2 != st || err != nil {
				t.Errorf("Wait() again = %+v, %v", st2, err)
			}
		})
	}
	wg.Wait()
}

// waitStdin waits until the fake at bin has read n stdin lines.
func waitStdin(t *testing.T, bin string, n int) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, func() bool {
		calls := fakecli.Calls(t, bin)
		return len(calls) > 0 && len(calls[0].Stdin) >= n
	}, "the fake to read %d stdin lines", n)
}

// alive reports whether pid still runs 2s from now (a zombie left for init
// to reap counts as dead). It fails the test where it cannot tell (no /proc).
func alive(t *testing.T, pid int) bool {
	t.Helper()
	return !poll.Gone(t, pid, 2*time.Second)
}

func TestStreamWriteError(t *testing.T) {
	r := startFake(t, fakecli.Scenario{}, func(c *Config) { c.Stream = failingWriter{} })
	r.p.SendUser("hi")
	evs := until(t, r.p, TypeResult)
	r.p.CloseInput()
	rest(t, r.p)
	if _, err := r.p.Wait(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Wait() error = %v, want the stream error", err)
	}
	if len(evs) != 3 {
		t.Errorf("events = %s: decoding must go on without the stream", types(evs))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestStartErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{Binary: "/bin/true"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start(cancelled) = %v", err)
	}
	if _, err := Start(context.Background(), Config{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Start(no binary) = %v", err)
	}
	if _, err := Start(context.Background(), Config{Binary: "/nonexistent/claude"}); err == nil {
		t.Error("Start(missing binary) succeeded")
	}
}
