package claude

import (
	"encoding/json"
	"strings"
)

// The message kinds of the CLI's stream-json output, as the Agent SDK's
// message union (SDKMessage in @anthropic-ai/claude-agent-sdk's sdk.d.ts,
// 0.3.332 for CLI 2.1.332) lists them. A kind is a type, or a type and a
// subtype for system lines. pneuma decodes a typed payload for the kinds
// it acts on; every other kind is named here and its line kept as written
// (stream.jsonl, Event.Raw), and a kind named nowhere is kept the same way:
// an unknown kind is never an error. docs/claude-stream.md says what pneuma
// does with each kind.

// Line types beyond those pneuma acts on (see the constants in event.go).
const (
	TypeToolProgress      = "tool_progress"
	TypeAuthStatus        = "auth_status"
	TypeToolUseSummary    = "tool_use_summary"
	TypePromptSuggestion  = "prompt_suggestion"
	TypeConversationReset = "conversation_reset"
)

// System subtypes (type "system"), beyond init and api_retry.
const (
	SubtypeCompactBoundary        = "compact_boundary"
	SubtypeStatus                 = "status"
	SubtypeControlRequestProgress = "control_request_progress"
	SubtypeModelRefusalFallback   = "model_refusal_fallback"
	SubtypeModelRefusalNoFallback = "model_refusal_no_fallback"
	SubtypeLocalCommandOutput     = "local_command_output"
	SubtypeHookStarted            = "hook_started"
	SubtypeHookProgress           = "hook_progress"
	SubtypeHookResponse           = "hook_response"
	SubtypePluginInstall          = "plugin_install"
	SubtypeTaskNotification       = "task_notification"
	SubtypeTaskStarted            = "task_started"
	SubtypeTaskUpdated            = "task_updated"
	SubtypeTaskProgress           = "task_progress"
	SubtypeBackgroundTasksChanged = "background_tasks_changed"
	SubtypeThinkingTokens         = "thinking_tokens"
	SubtypeSessionStateChanged    = "session_state_changed"
	SubtypeWorkerShuttingDown     = "worker_shutting_down"
	SubtypeCommandsChanged        = "commands_changed"
	SubtypeNotification           = "notification"
	SubtypeFilesPersisted         = "files_persisted"
	SubtypeMemoryRecall           = "memory_recall"
	SubtypeElicitationComplete    = "elicitation_complete"
	SubtypePermissionDenied       = "permission_denied"
	SubtypeMirrorError            = "mirror_error"
	SubtypeInformational          = "informational"
	SubtypeSessionWritesLost      = "session_writes_lost"
)

// Kinds lists every message kind of the SDK's union, as Event.Kind names
// them ("system/<subtype>" for system lines), in the union's order.
var Kinds = []string{
	TypeAssistant, TypeUser, TypeResult, TypeSystem + "/" + SubtypeInit, TypeStreamEvent,
	sys(SubtypeCompactBoundary), sys(SubtypeStatus), sys(SubtypeAPIRetry), sys(SubtypeControlRequestProgress),
	sys(SubtypeModelRefusalFallback), sys(SubtypeModelRefusalNoFallback), sys(SubtypeLocalCommandOutput),
	sys(SubtypeHookStarted), sys(SubtypeHookProgress), sys(SubtypeHookResponse), sys(SubtypePluginInstall),
	TypeToolProgress, TypeAuthStatus, sys(SubtypeTaskNotification), sys(SubtypeTaskStarted),
	sys(SubtypeTaskUpdated), sys(SubtypeTaskProgress), sys(SubtypeBackgroundTasksChanged),
	sys(SubtypeThinkingTokens), sys(SubtypeSessionStateChanged), sys(SubtypeWorkerShuttingDown),
	sys(SubtypeCommandsChanged), sys(SubtypeNotification), sys(SubtypeFilesPersisted), TypeToolUseSummary,
	sys(SubtypeMemoryRecall), TypeRateLimit, sys(SubtypeElicitationComplete), sys(SubtypePermissionDenied),
	TypePromptSuggestion, sys(SubtypeMirrorError), sys(SubtypeInformational), TypeConversationReset,
	sys(SubtypeSessionWritesLost),
}

func sys(subtype string) string { return TypeSystem + "/" + subtype }

// Kind names the event's message kind: its type, and for a system line
// "system/<subtype>".
func (e Event) Kind() string {
	if e.Type == TypeSystem && e.Subtype != "" {
		return sys(e.Subtype)
	}
	return e.Type
}

// CompactBoundary is a system/compact_boundary line: the CLI compacted the
// conversation (Trigger "manual" for /compact, "auto" near the context
// limit); what came before is summarised from here on.
type CompactBoundary struct {
	Trigger    string `json:"trigger"`
	PreTokens  int64  `json:"pre_tokens"`
	PostTokens int64  `json:"post_tokens,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// ModelFallback is a system/model_refusal_fallback line: the model refused
// and the turn was retried on FallbackModel (Scope "session", or absent,
// keeps it for the rest of the session; "local" for one answer only).
type ModelFallback struct {
	Direction     string `json:"direction"`
	Scope         string `json:"scope,omitempty"`
	OriginalModel string `json:"original_model"`
	FallbackModel string `json:"fallback_model"`
	Content       string `json:"content,omitempty"`
}

// WritesLost is a system/session_writes_lost line: the CLI could not save
// part of its state (ErrorCode ENOSPC or EDQUOT); with "transcript" in Lost
// the sessions of TranscriptSessionIDs are incomplete on disk.
type WritesLost struct {
	ErrorCode            string   `json:"error_code"`
	Lost                 []string `json:"lost"`
	TranscriptSessionIDs []string `json:"transcript_session_ids,omitempty"`
}

// Denied is a system/permission_denied line: a tool call refused without a
// prompt (a deny rule, dontAsk, the auto mode's classifier). The result's
// permission_denials stays the authoritative list.
type Denied struct {
	ToolName           string `json:"tool_name"`
	ToolUseID          string `json:"tool_use_id"`
	AgentID            string `json:"agent_id,omitempty"`
	DecisionReasonType string `json:"decision_reason_type,omitempty"`
	Message            string `json:"message,omitempty"`
}

// Task statuses of task_updated and task_notification.
const (
	TaskPending   = "pending"
	TaskRunning   = "running"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskKilled    = "killed"
	TaskStopped   = "stopped"
	TaskPaused    = "paused"
)

// Task is one of the task lines (task_started, task_updated, task_progress,
// task_notification): a subagent, a background shell or a workflow the CLI
// runs beside the conversation. Status is task_notification's status, or
// task_updated's patch.status; "" when the line sets none.
type Task struct {
	TaskID       string `json:"task_id"`
	ToolUseID    string `json:"tool_use_id,omitempty"`
	Description  string `json:"description,omitempty"`
	TaskType     string `json:"task_type,omitempty"`
	SubagentType string `json:"subagent_type,omitempty"`
	Background   bool   `json:"is_backgrounded,omitempty"`
	Status       string `json:"status,omitempty"`
	Summary      string `json:"summary,omitempty"`
}

// Ended reports whether the task's status says it is over.
func (t *Task) Ended() bool {
	switch t.Status {
	case TaskCompleted, TaskFailed, TaskKilled, TaskStopped:
		return true
	}
	return false
}

// BackgroundTask is one entry of a background_tasks_changed line.
type BackgroundTask struct {
	TaskID       string `json:"task_id"`
	TaskType     string `json:"task_type"`
	SubagentType string `json:"subagent_type,omitempty"`
	Description  string `json:"description"`
}

// BackgroundTasks is a system/background_tasks_changed line: the whole set
// of the process's live background tasks, which replaces the previous one.
type BackgroundTasks struct {
	Tasks []BackgroundTask `json:"tasks"`
}

// Hook is one of the hook lines (hook_started, hook_progress,
// hook_response) the CLI writes with --include-hook-events. Phase is the
// line's subtype without "hook_" (started, progress, response); Outcome
// (HookSuccess, "error", "cancelled") and ExitCode belong to hook_response.
// The hook's output is not kept here: it stays in the stream only.
type Hook struct {
	HookID    string `json:"hook_id"`
	HookName  string `json:"hook_name"`
	HookEvent string `json:"hook_event"`
	Phase     string `json:"phase"`
	Outcome   string `json:"outcome,omitempty"`
	ExitCode  *int   `json:"exit_code,omitempty"`
}

// HookSuccess is the outcome of a hook that succeeded.
const HookSuccess = "success"

// Failed reports whether a hook_response says the hook did not succeed.
func (h *Hook) Failed() bool {
	return h.Phase == "response" && h.Outcome != "" && h.Outcome != HookSuccess
}

// decodeSystem decodes the typed payload of the system subtypes pneuma
// acts on beyond init and api_retry.
func decodeSystem(ev *Event, line []byte) error {
	var dst any
	switch ev.Subtype {
	case SubtypeCompactBoundary:
		var v struct {
			Meta *CompactBoundary `json:"compact_metadata"`
		}
		err := json.Unmarshal(line, &v)
		ev.Compact = v.Meta
		if ev.Compact == nil {
			ev.Compact = &CompactBoundary{}
		}
		return err
	case SubtypeModelRefusalFallback:
		ev.Fallback = new(ModelFallback)
		dst = ev.Fallback
	case SubtypeSessionWritesLost:
		ev.WritesLost = new(WritesLost)
		dst = ev.WritesLost
	case SubtypePermissionDenied:
		ev.Denied = new(Denied)
		dst = ev.Denied
	case SubtypeTaskStarted, SubtypeTaskUpdated, SubtypeTaskProgress, SubtypeTaskNotification:
		return decodeTask(ev, line)
	case SubtypeBackgroundTasksChanged:
		ev.Background = &BackgroundTasks{}
		dst = ev.Background
	case SubtypeHookStarted, SubtypeHookProgress, SubtypeHookResponse:
		ev.Hook = new(Hook)
		err := json.Unmarshal(line, ev.Hook)
		ev.Hook.Phase = strings.TrimPrefix(ev.Subtype, "hook_")
		return err
	default:
		return nil
	}
	return json.Unmarshal(line, dst)
}

// decodeTask decodes a task line; task_updated carries its status and
// description in a patch.
func decodeTask(ev *Event, line []byte) error {
	var v struct {
		Task
		Patch *struct {
			Status      string `json:"status"`
			Description string `json:"description"`
			Background  *bool  `json:"is_backgrounded"`
		} `json:"patch"`
	}
	err := json.Unmarshal(line, &v)
	t := v.Task
	if p := v.Patch; p != nil {
		t.Status = firstSet(p.Status, t.Status)
		t.Description = firstSet(p.Description, t.Description)
		if p.Background != nil {
			t.Background = *p.Background
		}
	}
	ev.Task = &t
	return err
}

func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
