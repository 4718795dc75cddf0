package claude

import (
	"bufio"
	"bytes"
	"os"
	"reflect"
	"slices"
	"testing"
)

// kindLines are testdata/kinds.jsonl: one line of every kind of the SDK's
// message union, written from its type definitions, then two of kinds
// nobody knows.
func kindLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/kinds.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	return lines
}

func TestEveryKindDecodes(t *testing.T) {
	seen := map[string]bool{}
	for _, line := range kindLines(t) {
		ev := Decode(line)
		if ev.Err != nil || ev.Type == TypeInvalid {
			t.Errorf("%s: %v", line, ev.Err)
		}
		if ev.SessionID != "s1" {
			t.Errorf("%s: session id %q", ev.Kind(), ev.SessionID)
		}
		seen[ev.Kind()] = true
	}
	for _, k := range Kinds {
		if !seen[k] {
			t.Errorf("no fixture line of kind %s", k)
		}
	}
	if len(Kinds) != 39 { // the union's 40 members; the user replay shares "user"
		t.Errorf("Kinds has %d entries, want 39", len(Kinds))
	}
	for _, k := range []string{"brand_new_kind", "system/brand_new_subtype"} {
		if !seen[k] || slices.Contains(Kinds, k) {
			t.Errorf("unknown kind %s: seen %v", k, seen[k])
		}
	}
}

func TestKindPayloads(t *testing.T) {
	byKind := map[string]Event{}
	for _, line := range kindLines(t) {
		ev := Decode(line)
		byKind[ev.Kind()] = ev
	}
	tests := []struct {
		kind string
		got  func(ev Event) any
		want any
	}{
		{"system/compact_boundary", func(ev Event) any { return ev.Compact },
			&CompactBoundary{Trigger: "manual", PreTokens: 52000, PostTokens: 3100, DurationMS: 4200}},
		{"system/model_refusal_fallback", func(ev Event) any { return ev.Fallback },
			&ModelFallback{Direction: "retry", Scope: "session", OriginalModel: "claude-opus-5-5", FallbackModel: "claude-sonnet-5", Content: "Switched to claude-sonnet-5"}},
		{"system/session_writes_lost", func(ev Event) any { return ev.WritesLost },
			&WritesLost{ErrorCode: "ENOSPC", Lost: []string{"transcript"}, TranscriptSessionIDs: []string{"s1"}}},
		{"system/permission_denied", func(ev Event) any { return ev.Denied },
			&Denied{ToolName: "Bash", ToolUseID: "t3", DecisionReasonType: "mode", Message: "denied in dontAsk mode"}},
		{"system/task_started", func(ev Event) any { return ev.Task },
			&Task{TaskID: "b1", ToolUseID: "t2", Description: "run the server", TaskType: "local_bash", Background: true}},
		{"system/task_updated", func(ev Event) any { return ev.Task }, &Task{TaskID: "b1", Status: TaskKilled}},
		{"system/task_notification", func(ev Event) any { return ev.Task },
			&Task{TaskID: "b1", ToolUseID: "t2", Status: TaskCompleted, Summary: "done"}},
		{"system/background_tasks_changed", func(ev Event) any { return ev.Background },
			&BackgroundTasks{Tasks: []BackgroundTask{{TaskID: "b1", TaskType: "local_bash", Description: "run the server"}}}},
		{"system/hook_response", func(ev Event) any { return ev.Hook },
			&Hook{HookID: "h1", HookName: "PreToolUse:Bash", HookEvent: "PreToolUse", Phase: "response", Outcome: "success", ExitCode: intp(0)}},
		{"system/api_retry", func(ev Event) any { return ev.Retry },
			&APIRetry{Attempt: 2, MaxRetries: 10, RetryDelayMS: 1200, ErrorStatus: intp(529), Error: "overloaded"}},
	}
	for _, tt := range tests {
		ev, ok := byKind[tt.kind]
		if !ok {
			t.Fatalf("no %s line", tt.kind)
		}
		if got := tt.got(ev); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.kind, got, tt.want)
		}
	}
	if !byKind["system/task_updated"].Task.Ended() || byKind["system/task_started"].Task.Ended() {
		t.Error("Task.Ended: a killed task is over, a started one is not")
	}
	if h := byKind["system/hook_started"].Hook; h == nil || h.Phase != "started" || h.Failed() || byKind["system/hook_response"].Hook.Failed() {
		t.Errorf("hook_started %+v: want phase started, and neither it nor a successful response failed", h)
	}
	if h := Decode([]byte(`{"type":"system","subtype":"hook_response","hook_id":"h2","hook_name":"PostToolUse:Bash","hook_event":"PostToolUse","exit_code":1,"outcome":"error"}`)).Hook; h == nil || !h.Failed() {
		t.Errorf("a hook_response with outcome error: %+v, want Failed", h)
	}
	// A kind pneuma does not act on has no typed payload.
	if ev := byKind["system/thinking_tokens"]; ev.Hook != nil || ev.Task != nil || ev.Compact != nil {
		t.Errorf("thinking_tokens got a payload: %+v", ev)
	}
}

// TestKindPayloadOfWrongShape: a known kind whose payload has another
// shape keeps its kind and says why, never stops the stream.
func TestKindPayloadOfWrongShape(t *testing.T) {
	ev := Decode([]byte(`{"type":"system","subtype":"task_started","task_id":7,"session_id":"s1"}`))
	if ev.Kind() != "system/task_started" || ev.Err == nil || ev.Task == nil {
		t.Errorf("got %+v", ev)
	}
	ev = Decode([]byte(`{"type":"system","subtype":"compact_boundary","session_id":"s1"}`))
	if ev.Err != nil || ev.Compact == nil {
		t.Errorf("a compact_boundary without metadata: %+v", ev)
	}
}
