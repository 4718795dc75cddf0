package claude

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Control request subtypes the CLI sends to its client.
const (
	ControlCanUseTool   = "can_use_tool"
	ControlHookCallback = "hook_callback"
)

// ControlRequest is a control_request written by the CLI (can_use_tool,
// hook_callback, ...). Every one must be answered exactly once: the CLI
// waits for ever for a can_use_tool answer.
type ControlRequest struct {
	RequestID string
	Subtype   string
	// ToolName, ToolUseID and Input describe the tool call of a can_use_tool
	// request; hook_callback requests carry CallbackID and the hook's Input.
	ToolName   string
	ToolUseID  string
	CallbackID string
	Input      json.RawMessage
	// Raw is the whole "request" object, for fields not decoded here.
	Raw json.RawMessage
}

type responseKind int

const (
	responseDefault responseKind = iota
	responseAllow
	responseDeny
	responseSuccess
	responseError
)

// ControlResponse is pneuma's answer to a ControlRequest. Build it with
// Allow, Deny, HookResult or ControlError. The zero value is the safe
// default: deny a can_use_tool request, an error reply to anything else.
type ControlResponse struct {
	kind         responseKind
	updatedInput json.RawMessage
	message      string
	interrupt    bool
	value        any
}

// Allow permits a tool call. updatedInput is the input the tool runs with;
// nil means the request's own input. The CLI rejects an allow without
// updatedInput, so the input is always echoed.
func Allow(updatedInput json.RawMessage) ControlResponse {
	return ControlResponse{kind: responseAllow, updatedInput: updatedInput}
}

// Deny refuses a tool call with a message the model sees. interrupt also
// ends the turn (the result is then error_during_execution).
func Deny(message string, interrupt bool) ControlResponse {
	return ControlResponse{kind: responseDeny, message: message, interrupt: interrupt}
}

// HookResult answers a hook_callback (or any request that wants a success
// payload) with v, marshalled as JSON; for example {"continue": true}.
func HookResult(v any) ControlResponse {
	return ControlResponse{kind: responseSuccess, value: v}
}

// ControlError answers a request with an error reply.
func ControlError(msg string) ControlResponse {
	return ControlResponse{kind: responseError, message: msg}
}

// defaultDenyMessage is what the model reads when nobody decided.
const defaultDenyMessage = "pneuma: no permission handler is configured; tool use denied"

// encodeControlResponse builds the control_response line (without newline)
// answering req with r.
func encodeControlResponse(req *ControlRequest, r ControlResponse) []byte {
	if r.kind == responseDefault {
		if req.Subtype == ControlCanUseTool {
			r = Deny(defaultDenyMessage, false)
		} else {
			r = ControlError(fmt.Sprintf("pneuma: unsupported control request subtype: %s", req.Subtype))
		}
	}
	var payload any
	switch r.kind {
	case responseAllow:
		in := r.updatedInput
		if !isJSONObject(in) {
			in = req.Input
		}
		if !isJSONObject(in) {
			in = json.RawMessage("{}")
		}
		payload = struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			ToolUseID    string          `json:"toolUseID,omitempty"`
		}{"allow", in, req.ToolUseID}
	case responseDeny:
		payload = struct {
			Behavior  string `json:"behavior"`
			Message   string `json:"message"`
			Interrupt bool   `json:"interrupt,omitempty"`
			ToolUseID string `json:"toolUseID,omitempty"`
		}{"deny", r.message, r.interrupt, req.ToolUseID}
	case responseSuccess:
		payload = r.value
	}
	if r.kind != responseError {
		body, err := json.Marshal(payload)
		if err == nil {
			return mustMarshal(controlResponseLine{Type: TypeControlResponse, Response: controlResponseBody{
				Subtype: "success", RequestID: req.RequestID, Response: body,
			}})
		}
		r = ControlError(fmt.Sprintf("pneuma: encode control response: %v", err))
	}
	return mustMarshal(controlResponseLine{Type: TypeControlResponse, Response: controlResponseBody{
		Subtype: "error", RequestID: req.RequestID, Error: r.message,
	}})
}

type controlResponseLine struct {
	Type     string              `json:"type"`
	Response controlResponseBody `json:"response"`
}

type controlResponseBody struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// InitializeRequest is the initialize control request, sent before the first
// user message to register hooks.
type InitializeRequest struct {
	// Hooks maps a hook event ("PreToolUse", "PostToolUse", ...) to matchers.
	Hooks map[string][]HookMatcher `json:"hooks,omitempty"`
}

// HookMatcher registers callbacks for the tools matching Matcher (empty: all).
// The CLI sends a hook_callback control request naming one of the
// HookCallbackIDs whenever the hook fires.
type HookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	// Timeout is in seconds; 0 leaves the CLI's default.
	Timeout int `json:"timeout,omitempty"`
}

// controlRequestLine is a control request pneuma sends.
type controlRequestLine struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

// userLine is a user message written to stdin.
type userLine struct {
	Type    string `json:"type"`
	Message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	SessionID       string  `json:"session_id"`
}

func newUserLine(text string) []byte {
	var u userLine
	u.Type = TypeUser
	u.Message.Role = "user"
	u.Message.Content = text
	return mustMarshal(u)
}

// newRequestID returns a fresh id for a control request pneuma sends.
func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "pneuma_" + hex.EncodeToString(b[:])
}

func isJSONObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// mustMarshal marshals values whose types cannot fail to encode (plain
// structs of strings and raw messages already validated).
func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("claude: marshal %T: %v", v, err)) // a programming error, not input
	}
	return b
}
