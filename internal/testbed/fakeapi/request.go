package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Request is one POST /v1/messages call as the fake received it, decoded into
// the parts tests route and assert on. Body holds the raw JSON for anything else.
type Request struct {
	N        int         // 1-based arrival order on this server
	Model    string      // "model" of the request body
	Stream   bool        // "stream" of the request body; false for the CLI's non-streaming fallback
	System   string      // the text of every system block, joined with "\n"
	Messages []Message   // the conversation, in order
	Tools    []string    // names of the tools offered, in order
	Query    string      // raw query string, e.g. "beta=true"
	Time     time.Time   // arrival time
	Header   http.Header // request headers (a copy)
	Body     []byte      // raw request body
}

// Message is one entry of a request's "messages": a role and its content
// blocks. A plain string content becomes a single text block.
type Message struct {
	Role    string
	Content []Block
}

// Block is one content block of a message. Only the fields of its Type are set.
type Block struct {
	Type      string          // "text", "tool_use", "tool_result", "thinking", "image", ...
	Text      string          // text blocks
	ID        string          // tool_use blocks
	Name      string          // tool_use blocks
	Input     json.RawMessage // tool_use blocks
	ToolUseID string          // tool_result blocks
	Content   string          // tool_result blocks: the text of their content, joined with "\n"
	IsError   bool            // tool_result blocks
}

// Text joins the text of the message's text blocks with "\n".
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolUses returns the message's tool_use blocks.
func (m Message) ToolUses() []Block { return m.blocks("tool_use") }

// ToolResults returns the message's tool_result blocks.
func (m Message) ToolResults() []Block { return m.blocks("tool_result") }

func (m Message) blocks(typ string) []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == typ {
			out = append(out, b)
		}
	}
	return out
}

// LastUser returns the last message with role "user", or a zero Message.
func (r *Request) LastUser() Message {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i]
		}
	}
	return Message{}
}

// FirstUser returns the first message with role "user", or a zero Message.
// For the CLI it holds the prompt (after any <system-reminder> blocks).
func (r *Request) FirstUser() Message {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m
		}
	}
	return Message{}
}

// Text returns the text of the last user message.
func (r *Request) Text() string { return r.LastUser().Text() }

// ToolResults returns the tool_result blocks of the last user message.
func (r *Request) ToolResults() []Block { return r.LastUser().ToolResults() }

// HasToolResult reports whether the last user message carries a tool_result,
// that is whether the CLI is answering tool calls rather than sending a prompt.
func (r *Request) HasToolResult() bool { return len(r.ToolResults()) > 0 }

// ToolResult returns the tool_result for the tool_use id in the last user
// message, and whether there is one.
func (r *Request) ToolResult(toolUseID string) (Block, bool) {
	for _, b := range r.ToolResults() {
		if b.ToolUseID == toolUseID {
			return b, true
		}
	}
	return Block{}, false
}

// Turn is the number of assistant messages in the conversation so far: 0 for
// the first call of a conversation, 1 after one tool round trip, and so on.
// Retries of a call have the same Turn.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Contains reports whether s occurs in the text of any user message or
// tool_result of the conversation (not in the system prompt).
func (r *Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			if strings.Contains(b.Text, s) || strings.Contains(b.Content, s) {
				return true
			}
		}
	}
	return false
}

// HasTool reports whether a tool of that name was offered.
func (r *Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// IsSubagent reports whether the request comes from a subagent the CLI
// started with the Agent tool rather than from the main conversation.
//
// Claude Code 2.1.197 marks subagent calls in the first system block, a
// billing header: "x-anthropic-billing-header: cc_version=…;
// cc_entrypoint=sdk-cli; cc_is_subagent=true;". The tool list is no guide:
// subagents are offered the Agent tool too.
func (r *Request) IsSubagent() bool { return strings.Contains(r.System, "cc_is_subagent=true") }

// TaskNotification returns the <result> of the background task notification
// the last user message carries, and whether it carries one.
//
// Claude Code 2.1.332 runs the Agent tool in the background by default: the
// Agent tool_result only says "Async agent launched successfully", and when
// the subagent ends the CLI sends the main thread a new user message holding
// "<task-notification>…<status>completed</status>…<result>REPORT</result>…".
// That message is neither a prompt nor a tool_result; a script that answers
// every message without a tool_result with its opening move loops.
func (r *Request) TaskNotification() (result string, ok bool) {
	text := r.LastUser().Text()
	_, n, ok := strings.Cut(text, "<task-notification>")
	if !ok {
		return "", false
	}
	if _, res, found := strings.Cut(n, "<result>"); found {
		result, _, _ = strings.Cut(res, "</result>")
	}
	return result, true
}

// IsPrompt reports whether the last user message is a prompt: neither tool
// results nor a background task notification.
func (r *Request) IsPrompt() bool {
	_, notified := r.TaskNotification()
	return !r.HasToolResult() && !notified
}

// AsyncAgentLaunched reports whether the Agent tool_result b says the
// CLI started the subagent in the background (2.1.332) rather than holding
// the subagent's report (2.1.197).
func AsyncAgentLaunched(b Block) bool {
	return strings.HasPrefix(b.Content, "Async agent launched")
}

// String summarises the request for test logs.
func (r *Request) String() string {
	kind := "prompt"
	if r.HasToolResult() {
		kind = fmt.Sprintf("%d tool_result(s)", len(r.ToolResults()))
	} else if _, ok := r.TaskNotification(); ok {
		kind = "task-notification"
	}
	return fmt.Sprintf("#%d model=%s stream=%t messages=%d tools=%d last=%s", r.N, r.Model, r.Stream, len(r.Messages), len(r.Tools), kind)
}

type wireRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// parseRequest decodes a Messages API request body. Unknown fields are ignored,
// since the CLI adds new ones between versions.
func parseRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decode request body: %w", err)
	}
	r := Request{Model: w.Model, Stream: w.Stream, Body: body}
	system, err := blocksText(w.System)
	if err != nil {
		return Request{}, fmt.Errorf("decode system: %w", err)
	}
	r.System = system
	for i, m := range w.Messages {
		blocks, err := parseBlocks(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("decode messages[%d]: %w", i, err)
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: blocks})
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, t.Name)
	}
	return r, nil
}

// parseBlocks decodes content that is either a string or a list of blocks.
func parseBlocks(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []Block{{Type: "text", Text: s}}, nil
	}
	var ws []wireBlock
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, err
	}
	out := make([]Block, 0, len(ws))
	for _, w := range ws {
		b := Block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, Input: w.Input, ToolUseID: w.ToolUseID, IsError: w.IsError}
		if w.Type == "tool_result" {
			text, err := blocksText(w.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result %s: %w", w.ToolUseID, err)
			}
			b.Content = text
		}
		out = append(out, b)
	}
	return out, nil
}

// blocksText returns the text of content that is a string or a list of blocks.
func blocksText(raw json.RawMessage) (string, error) {
	blocks, err := parseBlocks(raw)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// WorkingDir returns the directory the CLI runs in, as it states it
// ("Primary working directory: /path"): in the system prompt (CLI 2.1.197) or
// in a system-role message inside "messages" (CLI 2.1.332), or "" when neither
// says (for instance under --system-prompt).
func (r *Request) WorkingDir() string {
	if dir := primaryDir(r.System); dir != "" {
		return dir
	}
	for _, m := range r.Messages {
		if m.Role == "system" {
			if dir := primaryDir(m.Text()); dir != "" {
				return dir
			}
		}
	}
	for _, m := range r.Messages {
		if dir := primaryDir(m.Text()); dir != "" {
			return dir
		}
	}
	return ""
}

// primaryDir returns the path after "Primary working directory: " in text, or "".
func primaryDir(text string) string {
	const marker = "Primary working directory: "
	i := strings.Index(text, marker)
	if i < 0 {
		return ""
	}
	dir, _, _ := strings.Cut(text[i+len(marker):], "\n")
	return strings.TrimSpace(dir)
}
