package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pneuma-cli/pneuma/usage"
)

// Event types pneuma gives a meaning to (kinds.go names the others). Any
// other type the CLI writes is passed through with its Type set and no
// typed payload.
const (
	TypeSystem          = "system"
	TypeAssistant       = "assistant"
	TypeUser            = "user"
	TypeResult          = "result"
	TypeStreamEvent     = "stream_event"
	TypeControlRequest  = "control_request"
	TypeControlResponse = "control_response"
	TypeControlCancel   = "control_cancel_request"
	TypeKeepAlive       = "keep_alive"
	TypeRateLimit       = "rate_limit_event"

	// TypeInvalid marks a line that is not a JSON object (including a torn
	// last line at EOF). It never stops the stream.
	TypeInvalid = "invalid"
	// TypeOversized marks a line longer than Config.MaxLineBytes: it was
	// copied to Config.Stream but not decoded.
	TypeOversized = "oversized"
)

// System subtypes with a typed payload.
const (
	SubtypeInit     = "init"
	SubtypeAPIRetry = "api_retry"
)

// Event is one line of the CLI's stdout, decoded just enough for pneuma to
// act on. Unknown types, subtypes and fields are tolerated: Type and Subtype
// are still set and the typed payloads stay nil.
type Event struct {
	// Type is the line's "type" ("system", "assistant", "result", ...), or
	// TypeInvalid / TypeOversized.
	Type    string
	Subtype string
	// SessionID is the line's "session_id", if any.
	SessionID string
	// ParentToolUseID is set on lines produced inside a subagent (the id of
	// the Agent tool_use that launched it).
	ParentToolUseID string
	// Size is the line's length in bytes, without the newline.
	Size int

	Init    *Init     // system/init
	Message *Message  // assistant and user
	Result  *Result   // result
	Retry   *APIRetry // system/api_retry
	// RateLimit is the account's unified rate-limit state (rate_limit_event).
	RateLimit *RateLimitInfo
	Control   *ControlRequest // control_request (CLI -> client)
	// The system lines pneuma acts on beyond init and api_retry (kinds.go).
	Compact    *CompactBoundary // system/compact_boundary
	Fallback   *ModelFallback   // system/model_refusal_fallback
	WritesLost *WritesLost      // system/session_writes_lost
	Denied     *Denied          // system/permission_denied
	Task       *Task            // system/task_started, task_updated, task_progress, task_notification
	Background *BackgroundTasks // system/background_tasks_changed
	Hook       *Hook            // system/hook_started, hook_progress, hook_response
	Reply      *ControlReply    // control_response (CLI -> client)
	// CancelRequestID is the request_id named by a control_cancel_request.
	CancelRequestID string
	// Parts are the parts of a line that are passed on as written, when
	// Config.Parts asked for them (nil otherwise): an assistant, user or
	// stream_event line's, taken in the line's one decoding pass, or any
	// other line whole.
	Parts *Parts

	// Err says why the line, or part of it, could not be decoded. A partial
	// decode keeps whatever payload could be read.
	Err error
}

// Init is the system/init line, written at the start of every turn.
type Init struct {
	SessionID      string   `json:"session_id"`
	Model          string   `json:"model"`
	Cwd            string   `json:"cwd"`
	PermissionMode string   `json:"permissionMode"`
	Version        string   `json:"claude_code_version"`
	Tools          []string `json:"tools"`
	// MCPServers are the session's MCP servers and how their start went.
	MCPServers []MCPServer `json:"mcp_servers"`
}

// MCPServer is one entry of the init line's mcp_servers, or of the answer
// to an mcp_status request: Status is "connected", "failed", "needs-auth" or
// "pending". Error says why a server failed (mcp_status only).
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Rate-limit statuses of RateLimitInfo.
const (
	RateLimitAllowed  = "allowed"
	RateLimitWarning  = "allowed_warning"
	RateLimitRejected = "rejected"
)

// RateLimitInfo is a rate_limit_event's rate_limit_info, built by the CLI
// from the API's anthropic-ratelimit-unified-* headers (subscription auth
// only). Rejected means the usage limit is reached until ResetsAt.
type RateLimitInfo struct {
	Status string `json:"status"`
	// ResetsAt is when the limit resets, in Unix seconds (0: unknown).
	ResetsAt int64 `json:"resetsAt"`
	// Type is the limit that applies: "five_hour", "seven_day", ...
	Type string `json:"rateLimitType"`
	// Utilization is the share of the limit used (0..1); nil when the CLI
	// gave none (it omits it on rejection).
	Utilization        *float64 `json:"utilization"`
	IsUsingOverage     bool     `json:"isUsingOverage"`
	SurpassedThreshold *float64 `json:"surpassedThreshold"`
}

// Usage is token usage as found in message.usage and result.usage.
type Usage = usage.Tokens

// ModelUsage is one model's entry in result.modelUsage (camelCase), cumulative
// for the process and including subagents.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// PermissionDenial is one tool call refused by the permission system.
type PermissionDenial struct {
	ToolName  string         `json:"tool_name"`
	ToolUseID string         `json:"tool_use_id"`
	ToolInput map[string]any `json:"tool_input"`
}

// Result is the result line that ends every turn. In stream-json input mode
// TotalCostUSD, ModelUsage and DurationAPIMS are cumulative for the process:
// take the last result, never sum them.
type Result struct {
	Subtype        string                `json:"subtype"`
	IsError        bool                  `json:"is_error"`
	APIErrorStatus *int                  `json:"api_error_status"`
	DurationMS     int64                 `json:"duration_ms"`
	DurationAPIMS  int64                 `json:"duration_api_ms"`
	NumTurns       int                   `json:"num_turns"`
	Result         string                `json:"result"`
	StopReason     string                `json:"stop_reason"`
	SessionID      string                `json:"session_id"`
	TerminalReason string                `json:"terminal_reason"`
	TotalCostUSD   float64               `json:"total_cost_usd"`
	Usage          Usage                 `json:"usage"`
	ModelUsage     map[string]ModelUsage `json:"modelUsage"`
	// PermissionDenials lists tools refused by the permission system (not
	// those removed by --tools or --disallowed-tools).
	PermissionDenials []PermissionDenial `json:"permission_denials"`
	Errors            []string           `json:"errors"`
	// StructuredOutput is the answer as JSON when the CLI ran with
	// --json-schema; nil otherwise.
	StructuredOutput json.RawMessage `json:"structured_output"`
}

// StopRefusal is the stop_reason of a turn the model refused: on the API
// message and on the CLI's result, which is an error (subtype success,
// is_error true) once the CLI's own retry and any fallback model refused too.
const StopRefusal = "refusal"

// Message is an API message as carried by assistant and user lines. On
// stdout each assistant line holds one content block, and its usage is the
// message_start value: never sum it, use Result.
type Message struct {
	ID         string
	Role       string
	Model      string
	StopReason string
	Content    []Block
	Usage      *Usage
}

// UnmarshalJSON accepts content as a list of blocks or as a plain string
// (which becomes one text block).
func (m *Message) UnmarshalJSON(data []byte) error {
	var w wireMessage
	err := json.Unmarshal(data, &w)
	msg, cerr := w.message()
	*m = *msg
	if err == nil {
		err = cerr
	}
	return err
}

// wireMessage is a message as written, its content left raw because it is a
// string or a list of blocks.
type wireMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Model      string          `json:"model"`
	StopReason string          `json:"stop_reason"`
	Content    json.RawMessage `json:"content"`
	Usage      *Usage          `json:"usage"`
}

func (w *wireMessage) message() (*Message, error) {
	m := &Message{ID: w.ID, Role: w.Role, Model: w.Model, StopReason: w.StopReason, Usage: w.Usage}
	content := bytes.TrimSpace(w.Content)
	var err error
	switch {
	case len(content) == 0 || bytes.Equal(content, []byte("null")):
	case content[0] == '"':
		var s string
		err = json.Unmarshal(content, &s)
		m.Content = []Block{{Type: "text", Text: s}}
	default:
		err = json.Unmarshal(content, &m.Content)
	}
	return m, err
}

// Block is one content block: text, tool_use, tool_result, thinking, or a
// type pneuma does not know (kept with its Type only).
type Block struct {
	Type string `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// Thinking is the text of a thinking block.
	Thinking string `json:"thinking,omitempty"`
	// ID and Name identify a tool_use; Input is its input object.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError belong to a tool_result. Content is a
	// string or a list of blocks, kept raw.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// APIRetry is a system/api_retry line: the CLI is retrying a failed API call.
type APIRetry struct {
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMS float64 `json:"retry_delay_ms"`
	ErrorStatus  *int    `json:"error_status"`
	Error        string  `json:"error"`
}

// ControlReply is a control_response line: the CLI's answer to a control
// request pneuma sent.
type ControlReply struct {
	RequestID string
	// Subtype is "success" or "error".
	Subtype string
	// Error is the message of an error reply, ErrorCode its code when the
	// CLI gives one (2.1.332: not_found and check_unreachable for set_model,
	// invalid_mode and bypass_not_launched for set_permission_mode).
	Error     string
	ErrorCode string
	// Response is the success payload; absent for some requests (interrupt).
	Response json.RawMessage
}

// Parts are the parts of an assistant, user or stream_event line that a
// server's clients get as the CLI wrote them.
type Parts struct {
	// Message is the "message" object of assistant and user lines.
	Message json.RawMessage
	// Event is the "event" object of stream_event lines.
	Event json.RawMessage
	// UUID is the line's "uuid".
	UUID string
	// Line is the whole line as written, for lines of other kinds (system
	// lines pneuma only names, hooks, kinds it does not know): they are
	// small, and a session passes them on verbatim.
	Line json.RawMessage
}

// lineHead is the part every line shares.
type lineHead struct {
	Type            string  `json:"type"`
	Subtype         string  `json:"subtype"`
	SessionID       string  `json:"session_id"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
}

// wireLine is the part every line shares, plus the message of assistant and
// user lines: those can be many MB, so they are decoded in this one pass
// rather than in a second one over the whole line.
type wireLine struct {
	lineHead
	Message *wireMessage `json:"message"`
}

// wireLineParts is wireLine that also keeps the Parts, in the same pass.
type wireLineParts struct {
	lineHead
	Message *keptMessage    `json:"message"`
	Event   json.RawMessage `json:"event"`
	UUID    string          `json:"uuid"`
}

// keptMessage is a message decoded and kept as written.
type keptMessage struct {
	wireMessage
	raw json.RawMessage
}

// UnmarshalJSON decodes the message and keeps a copy of its bytes.
func (m *keptMessage) UnmarshalJSON(data []byte) error {
	m.raw = append(json.RawMessage(nil), data...)
	return json.Unmarshal(data, &m.wireMessage)
}

// decodeHead decodes the part every line shares and the message, with the
// parts as written when parts is set.
func decodeHead(line []byte, parts bool) (lineHead, *wireMessage, *Parts, error) {
	if !parts {
		var h wireLine
		err := json.Unmarshal(line, &h)
		return h.lineHead, h.Message, nil, err
	}
	var h wireLineParts
	err := json.Unmarshal(line, &h)
	p := &Parts{Event: h.Event, UUID: h.UUID}
	var msg *wireMessage
	if h.Message != nil {
		msg, p.Message = &h.Message.wireMessage, h.Message.raw
	}
	return h.lineHead, msg, p, err
}

// Decode decodes one stdout line (without its newline). It never fails: a
// line that is not a JSON object gives a TypeInvalid event, and a line of a
// known type with unexpected fields keeps what could be read and sets Err.
func Decode(line []byte) Event { return decode(line, false) }

// DecodeParts is Decode that also keeps the Parts of assistant, user and
// stream_event lines, in the same pass over the line.
func DecodeParts(line []byte) Event { return decode(line, true) }

func decode(line []byte, parts bool) Event {
	ev := Event{Size: len(line)}
	trimmed := bytes.TrimSpace(line)
	invalid := func(err error) Event {
		ev.Type = TypeInvalid
		ev.Err = fmt.Errorf("line is not a json object (%d bytes): %w", len(line), err)
		return ev
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return invalid(errors.New("does not start with '{'"))
	}
	h, msg, kept, err := decodeHead(trimmed, parts)
	if err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return invalid(err)
		}
		// A field of an unexpected type: the rest is decoded. A "message"
		// that is not an object only matters on assistant and user lines.
		var typeErr *json.UnmarshalTypeError
		isMsg := errors.As(err, &typeErr) && strings.HasPrefix(typeErr.Field, "message")
		if !isMsg || h.Type == TypeAssistant || h.Type == TypeUser {
			ev.Err = fmt.Errorf("decode %s line: %w", h.Type, err)
		}
	}
	ev.Type, ev.Subtype, ev.SessionID = h.Type, h.Subtype, h.SessionID
	if h.ParentToolUseID != nil {
		ev.ParentToolUseID = *h.ParentToolUseID
	}
	if kept != nil {
		if h.Type == TypeAssistant || h.Type == TypeUser || h.Type == TypeStreamEvent {
			ev.Parts = kept
		} else {
			ev.Parts = &Parts{Line: bytes.Clone(trimmed)}
		}
	}
	err = nil
	switch {
	case h.Type == TypeSystem && h.Subtype == SubtypeInit:
		ev.Init = new(Init)
		err = json.Unmarshal(trimmed, ev.Init)
	case h.Type == TypeSystem && h.Subtype == SubtypeAPIRetry:
		ev.Retry = new(APIRetry)
		err = json.Unmarshal(trimmed, ev.Retry)
	case h.Type == TypeSystem:
		err = decodeSystem(&ev, trimmed)
	case h.Type == TypeAssistant || h.Type == TypeUser:
		if msg != nil {
			ev.Message, err = msg.message()
		}
	case h.Type == TypeRateLimit:
		var v struct {
			Info *RateLimitInfo `json:"rate_limit_info"`
		}
		err = json.Unmarshal(trimmed, &v)
		ev.RateLimit = v.Info
	case h.Type == TypeResult:
		ev.Result = new(Result)
		err = json.Unmarshal(trimmed, ev.Result)
	case h.Type == TypeControlRequest:
		ev.Control, err = decodeControlRequest(trimmed)
	case h.Type == TypeControlResponse:
		ev.Reply, err = decodeControlReply(trimmed)
	case h.Type == TypeControlCancel:
		var v struct {
			RequestID string `json:"request_id"`
		}
		err = json.Unmarshal(trimmed, &v)
		ev.CancelRequestID = v.RequestID
	}
	if err != nil && ev.Err == nil {
		ev.Err = fmt.Errorf("decode %s line: %w", h.Type, err)
	}
	return ev
}

func decodeControlRequest(line []byte) (*ControlRequest, error) {
	var v struct {
		RequestID string          `json:"request_id"`
		Request   json.RawMessage `json:"request"`
	}
	err := json.Unmarshal(line, &v)
	req := &ControlRequest{RequestID: v.RequestID, Raw: v.Request}
	if len(v.Request) > 0 {
		var body struct {
			Subtype    string          `json:"subtype"`
			ToolName   string          `json:"tool_name"`
			ToolUseID  string          `json:"tool_use_id"`
			CallbackID string          `json:"callback_id"`
			Input      json.RawMessage `json:"input"`
		}
		if berr := json.Unmarshal(v.Request, &body); berr != nil && err == nil {
			err = berr
		}
		req.Subtype, req.ToolName, req.ToolUseID = body.Subtype, body.ToolName, body.ToolUseID
		req.CallbackID, req.Input = body.CallbackID, body.Input
	}
	return req, err
}

func decodeControlReply(line []byte) (*ControlReply, error) {
	var v struct {
		Response struct {
			Subtype   string          `json:"subtype"`
			RequestID string          `json:"request_id"`
			Error     json.RawMessage `json:"error"`
			ErrorCode string          `json:"error_code"`
			Response  json.RawMessage `json:"response"`
		} `json:"response"`
	}
	err := json.Unmarshal(line, &v)
	r := &ControlReply{RequestID: v.Response.RequestID, Subtype: v.Response.Subtype, ErrorCode: v.Response.ErrorCode, Response: v.Response.Response}
	if len(v.Response.Error) > 0 {
		// The error is a string in every observed reply; keep anything else
		// readable rather than dropping it.
		var s string
		if json.Unmarshal(v.Response.Error, &s) == nil {
			r.Error = s
		} else {
			r.Error = string(v.Response.Error)
		}
	}
	return r, err
}
