package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func intp(v int) *int { return &v }

// referenceLines are the sample stdout lines of docs/claude-cli.md
// (sections 2 and 3), made valid JSON where that page elides with "…".
func referenceLines(t testing.TB) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	return lines
}

func TestDecodeReferenceSamples(t *testing.T) {
	lines := referenceLines(t)
	tests := []struct {
		name  string
		check func(t *testing.T, ev Event)
	}{
		{"system/init", func(t *testing.T, ev Event) {
			want := &Init{SessionID: "89ff5b7d-3125-48ae-91ba-b3028af7c709", Model: "claude-opus-4-8[1m]", Cwd: "/home/me/proj",
				PermissionMode: "default", Version: "2.1.197", Tools: []string{"Task", "Bash", "CronCreate", "..."}, MCPServers: []MCPServer{}}
			if ev.Type != "system" || ev.Subtype != "init" || !reflect.DeepEqual(ev.Init, want) {
				t.Errorf("got %+v / %+v", ev, ev.Init)
			}
		}},
		{"assistant text", func(t *testing.T, ev Event) {
			m := ev.Message
			if m == nil || m.ID != "msg_mock_1" || m.Role != "assistant" || m.Model != "claude-opus-4-8" || m.StopReason != "" ||
				len(m.Content) != 1 || m.Content[0].Text != "I'll create the file." ||
				*m.Usage != (Usage{InputTokens: 100, OutputTokens: 1}) || ev.ParentToolUseID != "" {
				t.Errorf("got %+v", m)
			}
		}},
		{"assistant tool_use", func(t *testing.T, ev Event) {
			b := ev.Message.Content[0]
			if b.Type != "tool_use" || b.ID != "toolu_mock_1" || b.Name != "Write" ||
				string(b.Input) != `{"file_path":"/home/me/proj/hello.txt","content":"hello\n"}` {
				t.Errorf("got %+v", b)
			}
		}},
		{"user tool_result", func(t *testing.T, ev Event) {
			b := ev.Message.Content[0]
			if ev.Type != "user" || b.Type != "tool_result" || !b.IsError || b.ToolUseID != "toolu_mock_1" ||
				!strings.HasPrefix(string(b.Content), `"Claude requested permissions`) {
				t.Errorf("got %+v", b)
			}
		}},
		{"result success", func(t *testing.T, ev Event) {
			r := ev.Result
			want := &Result{Subtype: "success", DurationMS: 740, DurationAPIMS: 139, NumTurns: 1, Result: "Hello from the fake API.",
				StopReason: "end_turn", SessionID: "89ff5b7d-…", TerminalReason: "completed", TotalCostUSD: 0.012375,
				Usage: Usage{InputTokens: 1200, OutputTokens: 80, CacheReadInputTokens: 5000, CacheCreationInputTokens: 300},
				ModelUsage: map[string]ModelUsage{"claude-opus-4-8[1m]": {InputTokens: 1200, OutputTokens: 80,
					CacheReadInputTokens: 5000, CacheCreationInputTokens: 300, CostUSD: 0.012375}},
				PermissionDenials: []PermissionDenial{}}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("got  %+v\nwant %+v", r, want)
			}
		}},
		{"api_retry", func(t *testing.T, ev Event) {
			want := &APIRetry{Attempt: 1, MaxRetries: 10, RetryDelayMS: 565.51, ErrorStatus: intp(500), Error: "server_error"}
			if !reflect.DeepEqual(ev.Retry, want) {
				t.Errorf("got %+v", ev.Retry)
			}
		}},
		{"interrupt reply without response", func(t *testing.T, ev Event) {
			if ev.Reply == nil || ev.Reply.RequestID != "req_int_1" || ev.Reply.Subtype != "success" || ev.Reply.Response != nil {
				t.Errorf("got %+v", ev.Reply)
			}
		}},
		{"interrupted user text", func(t *testing.T, ev Event) {
			if ev.Message.Content[0].Text != "[Request interrupted by user]" {
				t.Errorf("got %+v", ev.Message)
			}
		}},
		{"interrupted result", func(t *testing.T, ev Event) {
			r := ev.Result
			if r.Subtype != "error_during_execution" || !r.IsError || r.NumTurns != 2 || len(r.ModelUsage) != 0 {
				t.Errorf("got %+v", r)
			}
		}},
		{"can_use_tool", func(t *testing.T, ev Event) {
			c := ev.Control
			if c == nil || c.RequestID != "6333450e-366e-4db3-8b3a-ac791303a0dd" || c.Subtype != "can_use_tool" ||
				c.ToolName != "Bash" || c.ToolUseID != "toolu_mock_koua9cU7hLax1UfYCeacCsvI" ||
				string(c.Input) != `{"command":"echo should-not-run > denied.txt","description":"Run mock command"}` ||
				!bytes.Contains(c.Raw, []byte(`"blocked_path"`)) {
				t.Errorf("got %+v", c)
			}
		}},
		{"initialize reply", func(t *testing.T, ev Event) {
			if ev.Reply.RequestID != "init_1" || !bytes.Contains(ev.Reply.Response, []byte(`"pid":28754`)) {
				t.Errorf("got %+v", ev.Reply)
			}
		}},
		{"error reply", func(t *testing.T, ev Event) {
			if ev.Reply.Subtype != "error" || ev.Reply.Error != "Unsupported control request subtype: no_such_subtype" {
				t.Errorf("got %+v", ev.Reply)
			}
		}},
		{"hook_callback", func(t *testing.T, ev Event) {
			c := ev.Control
			if c.Subtype != "hook_callback" || c.CallbackID != "hook_0" || c.ToolUseID != "toolu_h" ||
				!bytes.Contains(c.Input, []byte(`"transcript_path":"/home/me/.claude/projects/-home-me-proj/s.jsonl"`)) {
				t.Errorf("got %+v", c)
			}
		}},
		{"unknown system subtype", func(t *testing.T, ev Event) {
			if ev.Type != "system" || ev.Subtype != "status" || ev.Init != nil || ev.SessionID != "s" {
				t.Errorf("got %+v", ev)
			}
		}},
		{"stream_event", func(t *testing.T, ev Event) {
			if ev.Type != "stream_event" || ev.Message != nil {
				t.Errorf("got %+v", ev)
			}
		}},
		{"control_cancel_request", func(t *testing.T, ev Event) {
			if ev.CancelRequestID != "6333450e" {
				t.Errorf("got %+v", ev)
			}
		}},
		{"keep_alive", func(t *testing.T, ev Event) {
			if ev.Type != "keep_alive" {
				t.Errorf("got %+v", ev)
			}
		}},
		{"unknown type", func(t *testing.T, ev Event) {
			if ev.Type != "rate_limit_event" {
				t.Errorf("got %+v", ev)
			}
		}},
		{"string content", func(t *testing.T, ev Event) {
			if len(ev.Message.Content) != 1 || !reflect.DeepEqual(ev.Message.Content[0], Block{Type: "text", Text: "first"}) {
				t.Errorf("got %+v", ev.Message)
			}
		}},
		{"subagent thinking", func(t *testing.T, ev Event) {
			if ev.ParentToolUseID != "toolu_agent_1" || ev.Message.Content[0].Thinking != "hmm" {
				t.Errorf("got %+v", ev)
			}
		}},
		{"api error result", func(t *testing.T, ev Event) {
			r := ev.Result
			if r.Subtype != "success" || !r.IsError || r.APIErrorStatus == nil || *r.APIErrorStatus != 500 {
				t.Errorf("got %+v", r)
			}
		}},
		{"max budget result", func(t *testing.T, ev Event) {
			r := ev.Result
			if r.Subtype != "error_max_budget_usd" || r.Usage != (Usage{}) || r.TotalCostUSD != 0.51 ||
				!reflect.DeepEqual(r.Errors, []string{"Reached maximum budget ($0.5)"}) ||
				len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Write" ||
				r.PermissionDenials[0].ToolInput["file_path"] != "/x" {
				t.Errorf("got %+v", r)
			}
		}},
	}
	if len(tests) != len(lines) {
		t.Fatalf("%d checks for %d sample lines", len(tests), len(lines))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Decode(lines[i])
			if ev.Err != nil {
				t.Fatalf("Decode() error: %v", ev.Err)
			}
			if ev.Size != len(lines[i]) {
				t.Errorf("Size = %d, want %d", ev.Size, len(lines[i]))
			}
			tt.check(t, ev)
		})
	}
}

func TestDecodeTolerance(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		wantType string
		wantErr  bool
	}{
		{"garbage", "garbage", TypeInvalid, true},
		{"empty", "", TypeInvalid, true},
		{"array", "[1,2]", TypeInvalid, true},
		{"truncated json", `{"type":"result","subtype":"succ`, TypeInvalid, true},
		{"no type", `{"foo":1}`, "", false},
		{"wrong field type keeps the rest", `{"type":"result","subtype":"success","num_turns":"three","total_cost_usd":0.5}`, TypeResult, true},
		{"message not an object", `{"type":"assistant","message":"hi"}`, TypeAssistant, true},
		{"subtype not a string", `{"type":"system","subtype":{"x":1}}`, TypeSystem, true},
		{"null message", `{"type":"assistant","message":null}`, TypeAssistant, false},
		{"crlf", "{\"type\":\"keep_alive\"}\r", TypeKeepAlive, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Decode([]byte(tt.line))
			if ev.Type != tt.wantType || (ev.Err != nil) != tt.wantErr {
				t.Errorf("Decode(%q) = type %q err %v; want type %q err %v", tt.line, ev.Type, ev.Err, tt.wantType, tt.wantErr)
			}
		})
	}
	ev := Decode([]byte(`{"type":"result","subtype":"success","num_turns":"three","total_cost_usd":0.5}`))
	if ev.Result == nil || ev.Result.TotalCostUSD != 0.5 {
		t.Errorf("partial result not kept: %+v", ev.Result)
	}
}

func TestEncodeControlResponse(t *testing.T) {
	canUse := &ControlRequest{RequestID: "r1", Subtype: ControlCanUseTool, ToolName: "Write", ToolUseID: "toolu_1",
		Input: json.RawMessage(`{"file_path":"/a","content":"x"}`)}
	hook := &ControlRequest{RequestID: "r2", Subtype: ControlHookCallback, CallbackID: "hook_0"}
	tests := []struct {
		name string
		req  *ControlRequest
		resp ControlResponse
		want string
	}{
		{"allow echoes input", canUse, Allow(nil),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"file_path":"/a","content":"x"},"toolUseID":"toolu_1"}}}`},
		{"allow updated input", canUse, Allow(json.RawMessage(`{"file_path":"/b","content":"y"}`)),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"file_path":"/b","content":"y"},"toolUseID":"toolu_1"}}}`},
		{"allow with non-object input echoes the request's", canUse, Allow(json.RawMessage(`null`)),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedInput":{"file_path":"/a","content":"x"},"toolUseID":"toolu_1"}}}`},
		{"deny", canUse, Deny("pneuma says no", false),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"pneuma says no","toolUseID":"toolu_1"}}}`},
		{"deny interrupt", canUse, Deny("stop right there", true),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"stop right there","interrupt":true,"toolUseID":"toolu_1"}}}`},
		{"default can_use_tool denies", canUse, ControlResponse{},
			`{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"deny","message":"` + defaultDenyMessage + `","toolUseID":"toolu_1"}}}`},
		{"hook result", hook, HookResult(map[string]bool{"continue": true}),
			`{"type":"control_response","response":{"subtype":"success","request_id":"r2","response":{"continue":true}}}`},
		{"default hook is an error", hook, ControlResponse{},
			`{"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"pneuma: unsupported control request subtype: hook_callback"}}`},
		{"error", hook, ControlError("boom"),
			`{"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"boom"}}`},
		{"unencodable hook result", hook, HookResult(func() {}),
			`{"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"pneuma: encode control response: json: unsupported type: func()"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(encodeControlResponse(tt.req, tt.resp)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestUserLine(t *testing.T) {
	got := string(newUserLine("fix \"it\"\nnow"))
	want := `{"type":"user","message":{"role":"user","content":"fix \"it\"\nnow"},"parent_tool_use_id":null,"session_id":""}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, l := range referenceLines(f) {
		f.Add(l)
	}
	f.Add([]byte(`{"type":"assistant","message":{"content":"x"}}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev := Decode(line)
		if ev.Size != len(line) {
			t.Fatalf("Size = %d, want %d", ev.Size, len(line))
		}
		if ev.Type == TypeInvalid && ev.Err == nil {
			t.Fatal("invalid event without an error")
		}
		if json.Valid(line) && bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && ev.Type == TypeInvalid {
			t.Fatalf("valid JSON object decoded as invalid: %q", line)
		}
	})
}

// DecodeParts keeps, in its one pass, the parts clients get as written;
// Decode keeps none. What else it decodes is Decode's.
func TestDecodeParts(t *testing.T) {
	tests := []struct {
		line              string
		message, ev, uuid string
		none              bool // no parts: not a line
		whole             bool // another kind: the whole line
	}{
		{line: `{"type":"assistant","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"hi <b>"}]},"parent_tool_use_id":null,"session_id":"s","uuid":"u1"}`,
			message: `{"id":"m","role":"assistant","content":[{"type":"text","text":"hi <b>"}]}`, uuid: "u1"},
		{line: `{"type":"user","message":{"role":"user","content":"plain"},"uuid":"u2"}`, message: `{"role":"user","content":"plain"}`, uuid: "u2"},
		{line: `{"type":"stream_event","event":{"type":"content_block_delta","delta":{"text":"x"}},"session_id":"s","uuid":"u3"}`,
			ev: `{"type":"content_block_delta","delta":{"text":"x"}}`, uuid: "u3"},
		{line: `{"type":"result","subtype":"success","result":"done","message":{"x":1}}`, whole: true},
		{line: `not json`, none: true},
	}
	for _, tt := range tests {
		got := DecodeParts([]byte(tt.line))
		want := Decode([]byte(tt.line))
		if want.Parts != nil {
			t.Errorf("Decode(%s) kept parts", tt.line)
		}
		p := got.Parts
		got.Parts = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeParts(%s) = %+v, Decode = %+v", tt.line, got, want)
		}
		if tt.none {
			if p != nil {
				t.Errorf("DecodeParts(%s) kept parts %+v", tt.line, p)
			}
			continue
		}
		if tt.whole {
			if p == nil || string(p.Line) != tt.line || p.Message != nil || p.Event != nil {
				t.Errorf("DecodeParts(%s) parts %+v, want the whole line", tt.line, p)
			}
			continue
		}
		if p == nil || string(p.Message) != tt.message || string(p.Event) != tt.ev || p.UUID != tt.uuid {
			t.Errorf("DecodeParts(%s) parts %+v", tt.line, p)
		}
	}
}
