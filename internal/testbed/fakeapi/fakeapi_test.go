package fakeapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// post sends a Messages API request with the given stream flag and content.
func post(t *testing.T, url string, stream bool, messages string) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"model":"claude-opus-4-8","stream":%t,"system":[{"type":"text","text":"sys one"},{"type":"text","text":"sys two"}],"tools":[{"name":"Bash"},{"name":"Write"}],"messages":%s}`, stream, messages)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages?beta=true", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("x-api-key", "sk-test-unit")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const hello = `[{"role":"user","content":"hello"}]`

type sseEvent struct {
	name string
	data map[string]any
}

// readSSE parses an SSE body strictly: "event: X\ndata: JSON\n\n" frames whose
// event name equals the data's type. It returns the events read before an
// error, and the error (nil at a clean EOF).
func readSSE(t *testing.T, body io.Reader) ([]sseEvent, error) {
	t.Helper()
	var evs []sseEvent
	rd := bufio.NewReader(body)
	for {
		ev, err := rd.ReadString('\n')
		if err == io.EOF && ev == "" {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		data, err := rd.ReadString('\n')
		if err != nil {
			return evs, err
		}
		blank, err := rd.ReadString('\n')
		if err != nil {
			return evs, err
		}
		if !strings.HasPrefix(ev, "event: ") || !strings.HasPrefix(data, "data: ") || blank != "\n" {
			t.Fatalf("bad SSE frame: %q %q %q", ev, data, blank)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &m); err != nil {
			t.Fatalf("SSE data is not JSON: %v: %q", err, data)
		}
		name := strings.TrimSpace(strings.TrimPrefix(ev, "event: "))
		if m["type"] != name {
			t.Fatalf("event %q carries data of type %v", name, m["type"])
		}
		evs = append(evs, sseEvent{name, m})
	}
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

func TestStreamFraming(t *testing.T) {
	t.Parallel()
	input := map[string]any{"command": "echo héllo → 世界 && true", "description": "unicode is split on rune boundaries"}
	api := fakeapi.New(t, fakeapi.Sequence(
		fakeapi.ToolUse(fakeapi.Tool("Bash", input), fakeapi.Write("/tmp/x", "x\n").WithID("toolu_fixed")).
			WithText("Working on it.").
			WithUsage(fakeapi.Usage{Input: 1200, Output: 80, CacheRead: 5000, CacheWrite: 300}),
	))
	resp := post(t, api.URL, true, hello)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if rid := resp.Header.Get("request-id"); !strings.HasPrefix(rid, "req_fake_") {
		t.Errorf("request-id = %q", rid)
	}
	evs, err := readSSE(t, resp.Body)
	if err != nil {
		t.Fatalf("read stream: %v", err)
	}
	got := strings.Join(names(evs), " ")
	if !strings.HasPrefix(got, "message_start ping content_block_start content_block_delta") ||
		!strings.HasSuffix(got, "content_block_stop message_delta message_stop") ||
		strings.Count(got, "content_block_start") != 3 || strings.Count(got, "content_block_stop") != 3 {
		t.Fatalf("event order: %s", got)
	}

	msg := evs[0].data["message"].(map[string]any)
	if id, _ := msg["id"].(string); !strings.HasPrefix(id, "msg_fake_") {
		t.Errorf("message id = %q", id)
	}
	wantStart := map[string]any{"input_tokens": 1200.0, "output_tokens": 1.0, "cache_read_input_tokens": 5000.0, "cache_creation_input_tokens": 300.0, "service_tier": "standard"}
	if u := msg["usage"]; !reflect.DeepEqual(u, wantStart) {
		t.Errorf("message_start usage = %v, want %v", u, wantStart)
	}
	if msg["model"] != "claude-opus-4-8" || msg["stop_reason"] != nil || len(msg["content"].([]any)) != 0 {
		t.Errorf("message_start message = %v", msg)
	}

	// Reassemble the blocks from their deltas.
	type blk struct {
		start map[string]any
		text  string
		json  string
	}
	var blocks []*blk
	for _, e := range evs {
		switch e.name {
		case "content_block_start":
			if int(e.data["index"].(float64)) != len(blocks) {
				t.Fatalf("block index %v, want %d", e.data["index"], len(blocks))
			}
			blocks = append(blocks, &blk{start: e.data["content_block"].(map[string]any)})
		case "content_block_delta":
			d := e.data["delta"].(map[string]any)
			b := blocks[int(e.data["index"].(float64))]
			switch d["type"] {
			case "text_delta":
				b.text += d["text"].(string)
			case "input_json_delta":
				b.json += d["partial_json"].(string)
			default:
				t.Errorf("delta type %v", d["type"])
			}
		}
	}
	if blocks[0].start["type"] != "text" || blocks[0].text != "Working on it." {
		t.Errorf("block 0 = %+v", *blocks[0])
	}
	for i, want := range []map[string]any{input, {"file_path": "/tmp/x", "content": "x\n"}} {
		b := blocks[i+1]
		if b.start["type"] != "tool_use" || !reflect.DeepEqual(b.start["input"], map[string]any{}) {
			t.Errorf("block %d start = %v", i+1, b.start)
		}
		var in map[string]any
		if err := json.Unmarshal([]byte(b.json), &in); err != nil || !reflect.DeepEqual(in, want) {
			t.Errorf("block %d input = %s (%v), want %v", i+1, b.json, err, want)
		}
	}
	if id := blocks[1].start["id"].(string); !strings.HasPrefix(id, "toolu_fake_") {
		t.Errorf("generated tool id = %q", id)
	}
	if id := blocks[2].start["id"]; id != "toolu_fixed" || blocks[2].start["name"] != "Write" {
		t.Errorf("fixed tool id/name = %v/%v", id, blocks[2].start["name"])
	}

	delta := evs[len(evs)-2].data
	if d := delta["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v", d["stop_reason"])
	}
	if u := delta["usage"].(map[string]any); u["output_tokens"] != 80.0 {
		t.Errorf("message_delta output_tokens = %v", u["output_tokens"])
	}
}

func TestDefaultUsageAndStopReason(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, nil)
	evs, err := readSSE(t, post(t, api.URL, true, hello).Body)
	if err != nil {
		t.Fatal(err)
	}
	u := evs[0].data["message"].(map[string]any)["usage"].(map[string]any)
	if u["input_tokens"] != float64(fakeapi.DefaultUsage.Input) || fakeapi.DefaultUsage.Input == 0 || fakeapi.DefaultUsage.Output == 0 {
		t.Errorf("usage %v, DefaultUsage %+v", u, fakeapi.DefaultUsage)
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "end_turn" || md["usage"].(map[string]any)["output_tokens"] != float64(fakeapi.DefaultUsage.Output) {
		t.Errorf("message_delta = %v", md)
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, fakeapi.Sequence(
		fakeapi.ToolUse(fakeapi.Edit("/a", "x", "y")).WithText("Editing.").WithUsage(fakeapi.Usage{Input: 7, Output: 9}),
	))
	resp := post(t, api.URL, false, hello)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("request-id") == "" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	var m struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct {
			Type, Text, ID, Name string
			Input                map[string]any
		}
		Usage map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "msg_fake_") || m.Type != "message" || m.Role != "assistant" || m.Model != "claude-opus-4-8" || m.StopReason != "tool_use" {
		t.Errorf("message = %+v", m)
	}
	if len(m.Content) != 2 || m.Content[0].Text != "Editing." || m.Content[1].Name != "Edit" ||
		!reflect.DeepEqual(m.Content[1].Input, map[string]any{"file_path": "/a", "old_string": "x", "new_string": "y"}) {
		t.Errorf("content = %+v", m.Content)
	}
	if m.Usage["input_tokens"] != 7.0 || m.Usage["output_tokens"] != 9.0 {
		t.Errorf("usage = %v", m.Usage)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		typ    string
		header [2]string
	}{
		{500, "api_error", [2]string{"x-should-retry", "false"}},
		{529, "overloaded_error", [2]string{}},
		{429, "rate_limit_error", [2]string{"retry-after", "1"}},
		{401, "authentication_error", [2]string{}},
		{400, "invalid_request_error", [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			r := fakeapi.Error(tt.status, tt.typ, "scripted "+tt.typ)
			if tt.header[0] != "" {
				r = r.WithHeader(tt.header[0], tt.header[1])
			}
			api := fakeapi.New(t, fakeapi.Sequence(r))
			for _, stream := range []bool{true, false} {
				resp := post(t, api.URL, stream, hello)
				if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("stream=%t: status %d, content-type %q", stream, resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				if tt.header[0] != "" && resp.Header.Get(tt.header[0]) != tt.header[1] {
					t.Errorf("header %s = %q", tt.header[0], resp.Header.Get(tt.header[0]))
				}
				var body struct {
					Type  string
					Error struct{ Type, Message string }
				}
				if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
					t.Fatal(err)
				}
				if body.Type != "error" || body.Error.Type != tt.typ || body.Error.Message != "scripted "+tt.typ {
					t.Errorf("body = %+v", body)
				}
				api.SetHandler(fakeapi.Sequence(r)) // the same error for the second request
			}
		})
	}
}

func TestBreakAfter(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("this stream breaks").BreakAfter(3), fakeapi.Text("whole").BreakAfter(3)))
	evs, err := readSSE(t, post(t, api.URL, true, hello).Body)
	if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("read error = %v, want unexpected EOF (a cut chunked body)", err)
	}
	if got := strings.Join(names(evs), " "); got != "message_start ping content_block_start" {
		t.Errorf("events before the break: %s", got)
	}
	// BreakAfter leaves non-streaming answers whole.
	var m map[string]any
	if err := json.NewDecoder(post(t, api.URL, false, hello).Body).Decode(&m); err != nil || m["type"] != "message" {
		t.Errorf("non-streaming answer = %v, %v", m, err)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("slow").WithDelay(20*time.Millisecond)))
	start := time.Now()
	evs, err := readSSE(t, post(t, api.URL, true, hello).Body)
	if err != nil {
		t.Fatal(err)
	}
	if min := time.Duration(len(evs)) * 20 * time.Millisecond; time.Since(start) < min {
		t.Errorf("%d events took %v, want at least %v", len(evs), time.Since(start), min)
	}
}

func TestHangReleasedAtCleanup(t *testing.T) {
	t.Parallel()
	errc := make(chan error, 1)
	t.Run("server", func(t *testing.T) {
		api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Hang()))
		go func() {
			resp, err := http.Post(api.URL+"/v1/messages", "application/json", strings.NewReader(`{"stream":true,"messages":[]}`))
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := api.WaitRequests(ctx, 1); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			t.Fatalf("hung request answered early: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}) // the subtest's cleanup closes the server
	select {
	case err := <-errc:
		if err == nil {
			t.Error("hung request got a response, want a dropped connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("hung request still blocked after the server's cleanup")
	}
}

func TestRequestsRecorded(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, nil)
	post(t, api.URL, true, hello)
	conversation := `[
		{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"do it"}]},
		{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},
		{"role":"system","content":"agent listing"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a.txt"},{"type":"text","text":"b.txt"}],"is_error":true},{"type":"tool_result","tool_use_id":"toolu_2","content":"plain"}]}
	]`
	post(t, api.URL, false, conversation)

	reqs := api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	first, r := reqs[0], reqs[1]
	if first.N != 1 || !first.Stream || first.Text() != "hello" || first.HasToolResult() || first.Turn() != 0 {
		t.Errorf("first = %s text %q", first.String(), first.Text())
	}
	if r.N != 2 || r.Stream || r.Model != "claude-opus-4-8" || r.System != "sys one\nsys two" || r.Query != "beta=true" ||
		r.Header.Get("x-api-key") != "sk-test-unit" || !reflect.DeepEqual(r.Tools, []string{"Bash", "Write"}) || !r.HasTool("Write") {
		t.Errorf("request = %+v", r)
	}
	if len(r.Messages) != 4 || r.Messages[2].Role != "system" || r.Messages[2].Text() != "agent listing" || r.Turn() != 1 {
		t.Errorf("messages = %+v", r.Messages)
	}
	if got := r.FirstUser().Text(); got != "<system-reminder>x</system-reminder>\ndo it" {
		t.Errorf("first user text = %q", got)
	}
	uses := r.Messages[1].ToolUses()
	if len(uses) != 1 || uses[0].ID != "toolu_1" || string(uses[0].Input) != `{"command":"ls"}` {
		t.Errorf("tool uses = %+v", uses)
	}
	want := []fakeapi.Block{
		{Type: "tool_result", ToolUseID: "toolu_1", Content: "a.txt\nb.txt", IsError: true},
		{Type: "tool_result", ToolUseID: "toolu_2", Content: "plain"},
	}
	if got := r.ToolResults(); !reflect.DeepEqual(got, want) || !r.HasToolResult() {
		t.Errorf("tool results = %+v", got)
	}
	if b, ok := r.ToolResult("toolu_2"); !ok || b.Content != "plain" {
		t.Errorf("ToolResult(toolu_2) = %+v, %t", b, ok)
	}
	if !r.Contains("b.txt") || !r.Contains("do it") || r.Contains("sys one") {
		t.Error("Contains searches user text and tool results only")
	}
	if !bytes.Contains(r.Body, []byte(`"toolu_2"`)) {
		t.Error("raw body not recorded")
	}
	reqs[0].Model = "changed"
	if api.Requests()[0].Model == "changed" {
		t.Error("Requests returned shared storage")
	}
}

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, nil)
	resp, err := http.Get(api.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type  string
		Error struct{ Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 404 || body.Type != "error" || body.Error.Type != "not_found_error" {
		t.Errorf("status %d, body %+v, %v", resp.StatusCode, body, err)
	}
	if got := api.Unhandled(); !reflect.DeepEqual(got, []string{"GET /v1/models"}) || len(api.Requests()) != 0 {
		t.Errorf("unhandled = %v, requests = %d", got, len(api.Requests()))
	}
}

func TestHandlers(t *testing.T) {
	t.Parallel()
	req := func(turns int, sub bool) *fakeapi.Request {
		r := &fakeapi.Request{Messages: []fakeapi.Message{{Role: "user"}}}
		for range turns {
			r.Messages = append(r.Messages, fakeapi.Message{Role: "assistant"}, fakeapi.Message{Role: "user"})
		}
		if sub {
			r.System = "x-anthropic-billing-header: cc_version=2.1.197.412; cc_entrypoint=sdk-cli; cc_is_subagent=true;"
		}
		return r
	}
	text := func(r fakeapi.Response) string { return fmt.Sprint(r) }

	seq := fakeapi.Sequence(fakeapi.Text("a"), fakeapi.Text("b"))
	for i, want := range []fakeapi.Response{fakeapi.Text("a"), fakeapi.Text("b"), fakeapi.Text("done"), fakeapi.Text("done")} {
		if got := seq(req(0, false)); text(got) != text(want) {
			t.Errorf("Sequence call %d = %v, want %v", i, got, want)
		}
	}
	turns := fakeapi.Turns(fakeapi.Text("t0"), fakeapi.Text("t1"))
	for n, want := range []string{"t0", "t1", "done"} {
		if got := turns(req(n, false)); text(got) != text(fakeapi.Text(want)) {
			t.Errorf("Turns at turn %d = %v, want %s", n, got, want)
		}
	}
	route := fakeapi.Route(func(*fakeapi.Request) fakeapi.Response { return fakeapi.Text("main") },
		func(*fakeapi.Request) fakeapi.Response { return fakeapi.Text("sub") })
	if text(route(req(0, true))) != text(fakeapi.Text("sub")) || text(route(req(0, false))) != text(fakeapi.Text("main")) {
		t.Error("Route does not split on IsSubagent")
	}
	// Builders return copies: a base response can be reused.
	base := fakeapi.Text("x")
	a, b := base.WithText("a").WithHeader("k", "1"), base.WithText("b").WithHeader("k", "2")
	if text(a) == text(b) || text(base) != text(fakeapi.Text("x")) {
		t.Error("builders share state")
	}
}

func TestRawAndOverrides(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, fakeapi.Sequence(
		fakeapi.Raw(200, "not json at all"),
		fakeapi.Text("cut").WithModel("claude-sonnet-5").WithStopReason("max_tokens"),
	))
	resp := post(t, api.URL, true, hello)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "not json at all" || resp.Header.Get("request-id") == "" {
		t.Errorf("raw: status %d, body %q", resp.StatusCode, body)
	}
	var m map[string]any
	if err := json.NewDecoder(post(t, api.URL, false, hello).Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if m["model"] != "claude-sonnet-5" || m["stop_reason"] != "max_tokens" {
		t.Errorf("overrides: model %v, stop_reason %v", m["model"], m["stop_reason"])
	}
}

func TestBreakAfterEveryEvent(t *testing.T) {
	t.Parallel()
	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("x").BreakAfter(1000)))
	evs, err := readSSE(t, post(t, api.URL, true, hello).Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) == 0 || evs[len(evs)-1].name != "message_stop" {
		t.Errorf("events %v, error %v: want all events, then an unterminated body", names(evs), err)
	}
}

func TestThinking(t *testing.T) {
	t.Parallel()
	r := fakeapi.Text("answer").WithThinking("let me think")
	api := fakeapi.New(t, fakeapi.Sequence(r, r))
	evs, err := readSSE(t, post(t, api.URL, true, hello).Body)
	if err != nil {
		t.Fatal(err)
	}
	var thinking, sig string
	for _, e := range evs {
		if e.name == "content_block_delta" && e.data["index"] == 0.0 {
			d := e.data["delta"].(map[string]any)
			switch d["type"] {
			case "thinking_delta":
				thinking += d["thinking"].(string)
			case "signature_delta":
				sig += d["signature"].(string)
			}
		}
	}
	if start := evs[2].data["content_block"].(map[string]any); start["type"] != "thinking" || thinking != "let me think" || sig == "" {
		t.Errorf("thinking block: start %v, text %q, signature %q", start, thinking, sig)
	}
	var m struct{ Content []map[string]any }
	if err := json.NewDecoder(post(t, api.URL, false, hello).Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 2 || m.Content[0]["type"] != "thinking" || m.Content[0]["thinking"] != "let me think" || m.Content[1]["text"] != "answer" {
		t.Errorf("non-streaming content = %v", m.Content)
	}
}
