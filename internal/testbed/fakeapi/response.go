package fakeapi

import (
	"net/http"
	"sync"
	"time"
)

// DefaultUsage is the token usage of a response that does not set one with
// WithUsage: 100 input and 20 output tokens, no cache. On claude-opus-4-8
// ($5/$25 per MTok) one such response costs $0.001.
var DefaultUsage = Usage{Input: 100, Output: 20}

// Usage is the token usage a response reports. The streaming answer sends it
// in message_start (with output_tokens 1) and the final Output in message_delta,
// as the real API does.
type Usage struct {
	Input      int // input_tokens
	Output     int // output_tokens
	CacheRead  int // cache_read_input_tokens
	CacheWrite int // cache_creation_input_tokens
}

// Call is one tool_use block of a response.
type Call struct {
	ID    string // tool_use id; generated (toolu_fake_…) when empty
	Name  string
	Input any // marshalled to JSON
}

// WithID returns the call with a fixed tool_use id, for tests that match the
// tool_result to it.
func (c Call) WithID(id string) Call { c.ID = id; return c }

// Tool is a tool_use of any tool with the given input.
func Tool(name string, input any) Call { return Call{Name: name, Input: input} }

// Write is a Write tool call. path should be absolute, as the CLI requires.
func Write(path, content string) Call {
	return Tool("Write", map[string]any{"file_path": path, "content": content})
}

// Edit is an Edit tool call replacing old with new once. The CLI refuses an
// Edit of a file not Read earlier in the conversation.
func Edit(path, old, new string) Call {
	return Tool("Edit", map[string]any{"file_path": path, "old_string": old, "new_string": new})
}

// Read is a Read tool call.
func Read(path string) Call { return Tool("Read", map[string]any{"file_path": path}) }

// Bash is a Bash tool call.
func Bash(command string) Call {
	return Tool("Bash", map[string]any{"command": command, "description": "fakeapi bash call"})
}

// Agent is an Agent (subagent) tool call of the general-purpose type.
func Agent(description, prompt string) Call {
	return Tool("Agent", map[string]any{"description": description, "prompt": prompt, "subagent_type": "general-purpose"})
}

// Response is what the fake answers to one request. Build it with Text,
// ToolUse, Error, Raw or Hang and refine it with the With… methods; each
// method returns a modified copy, so a Response value can be reused.
type Response struct {
	status     int      // 0 means 200
	thinking   *string  // a thinking block, first
	text       []string // text blocks, before tool_use blocks
	calls      []Call
	usage      *Usage
	model      string
	stopReason string
	errType    string
	errMsg     string
	raw        *string // body sent verbatim
	header     [][2]string
	delay      time.Duration
	hang       bool
	breakAfter int // SSE events before the connection is cut; 0 means never
}

// Text is a final answer made of one text block (stop_reason end_turn).
func Text(s string) Response { return Response{text: []string{s}} }

// ToolUse is a response holding one tool_use block per call (stop_reason
// tool_use); several calls make parallel tool calls.
func ToolUse(calls ...Call) Response {
	return Response{calls: append([]Call(nil), calls...)}
}

// Error is an Anthropic-shaped error: the HTTP status with body
// {"type":"error","error":{"type":errType,"message":msg}}. The CLI's usual
// pairs are 400 invalid_request_error, 401 authentication_error, 429
// rate_limit_error, 500 api_error and 529 overloaded_error.
func Error(status int, errType, msg string) Response {
	return Response{status: status, errType: errType, errMsg: msg}
}

// Raw answers with status and body verbatim (content-type application/json),
// for bodies the API never sends, such as invalid JSON.
func Raw(status int, body string) Response { return Response{status: status, raw: &body} }

// Hang never answers: the request blocks until the client gives up or the
// test ends.
func Hang() Response { return Response{hang: true} }

// WithText returns the response with a text block added before its tool_use
// blocks (after any earlier text blocks).
func (r Response) WithText(s string) Response {
	r.text = append(append([]string(nil), r.text...), s)
	return r
}

// WithThinking returns the response with a thinking block (with a fake
// signature) before all other blocks.
func (r Response) WithThinking(s string) Response { r.thinking = &s; return r }

// WithUsage returns the response with the token usage it reports.
func (r Response) WithUsage(u Usage) Response { r.usage = &u; return r }

// WithModel returns the response reporting model m instead of echoing the
// request's model.
func (r Response) WithModel(m string) Response { r.model = m; return r }

// WithStopReason returns the response with stop_reason s instead of end_turn
// (text only) or tool_use (with tool calls), e.g. "max_tokens".
func (r Response) WithStopReason(s string) Response { r.stopReason = s; return r }

// WithHeader returns the response with a header added, e.g. retry-after or
// x-should-retry.
func (r Response) WithHeader(k, v string) Response {
	r.header = append(append([][2]string(nil), r.header...), [2]string{k, v})
	return r
}

// WithDelay returns the response pausing d before each SSE event, or before
// the body of a non-streaming or error answer.
func (r Response) WithDelay(d time.Duration) Response { r.delay = d; return r }

// BreakAfter returns the response cut off after n SSE events: the connection
// is closed without message_stop, which makes the CLI repeat the request with
// stream:false. With n at or beyond the number of events, every event is sent
// and the connection is then closed without ending the chunked body. It
// applies to streaming requests only; a non-streaming request gets the whole
// message.
func (r Response) BreakAfter(nEvents int) Response { r.breakAfter = nEvents; return r }

// IsError reports whether the response is an HTTP error.
func (r Response) IsError() bool { return r.status >= 400 }

func (r Response) statusCode() int {
	if r.status == 0 {
		return http.StatusOK
	}
	return r.status
}

func (r Response) usageOrDefault() Usage {
	if r.usage != nil {
		return *r.usage
	}
	return DefaultUsage
}

func (r Response) stop() string {
	switch {
	case r.stopReason != "":
		return r.stopReason
	case len(r.calls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// Sequence answers the i-th request it handles with rs[i] and every request
// beyond the end with Text("done"). Retries count as requests, so
// Sequence(Error(529, …), Text("ok")) succeeds on the first retry.
func Sequence(rs ...Response) Handler {
	var mu sync.Mutex
	next := 0
	return func(*Request) Response {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(rs) {
			return Text("done")
		}
		next++
		return rs[next-1]
	}
}

// Turns answers a request by the position of its call in the conversation
// (Request.Turn): rs[0] to the prompt, rs[1] after the first tool round trip,
// and Text("done") beyond the end. Unlike Sequence it keeps the main thread
// and subagents apart, since each conversation counts its own turns.
func Turns(rs ...Response) Handler {
	return func(r *Request) Response {
		if t := r.Turn(); t < len(rs) {
			return rs[t]
		}
		return Text("done")
	}
}

// Route sends subagent requests (Request.IsSubagent) to sub and the rest to
// main.
func Route(main, sub Handler) Handler {
	return func(r *Request) Response {
		if r.IsSubagent() {
			return sub(r)
		}
		return main(r)
	}
}
