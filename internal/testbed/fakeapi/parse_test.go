package fakeapi

import (
	"strings"
	"testing"
)

func TestParseRequestErrors(t *testing.T) {
	for _, body := range []string{
		``,
		`[]`,
		`{"messages":"nope"}`,
		`{"messages":[{"role":"user","content":42}]}`,
		`{"system":7}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","content":{}}]}]}`,
	} {
		if _, err := parseRequest([]byte(body)); err == nil {
			t.Errorf("parseRequest(%q) succeeded", body)
		}
	}
	r, err := parseRequest([]byte(`{"model":"m","unknown":{"x":1},"system":"plain","messages":[{"role":"user","content":null}]}`))
	if err != nil || r.Model != "m" || r.System != "plain" || len(r.Messages) != 1 {
		t.Errorf("tolerant parse = %+v, %v", r, err)
	}
}

func TestSplit(t *testing.T) {
	for _, s := range []string{"", "a", "ab", "héllo 世界 😀", strings.Repeat("x", 10)} {
		pieces := split(s, 3)
		if strings.Join(pieces, "") != s || len(pieces) > 3 || len(pieces) == 0 {
			t.Errorf("split(%q) = %q", s, pieces)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"model":"claude-opus-4-8","stream":true,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}]}]}],"tools":[{"name":"Bash"}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"ls"}}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			return
		}
		_ = r.String()
		r.ToolResults()
		r.Turn()
	})
}

// TestTaskNotification reads the shapes CLI 2.1.332 sends around a
// background subagent: the launch's tool_result, then the notification.
func TestTaskNotification(t *testing.T) {
	launch, err := parseRequest([]byte(`{"messages":[{"role":"user","content":"Delegate."},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Agent","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"Async agent launched successfully.\nagentId: a1"}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := launch.TaskNotification(); ok || launch.IsPrompt() || !AsyncAgentLaunched(launch.ToolResults()[0]) {
		t.Errorf("launch: %s", launch.String())
	}
	note, err := parseRequest([]byte(`{"messages":[{"role":"user","content":"Delegate."},
		{"role":"user","content":[{"type":"text","text":"<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n<task-id>a1</task-id>\n<status>completed</status>\n<result>the report</result>\n</task-notification>\n</system-reminder>"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if res, ok := note.TaskNotification(); !ok || res != "the report" || note.IsPrompt() || !strings.Contains(note.String(), "task-notification") {
		t.Errorf("notification: %q %v, %s", res, ok, note.String())
	}
	prompt, _ := parseRequest([]byte(`{"messages":[{"role":"user","content":"Delegate."}]}`))
	if !prompt.IsPrompt() || AsyncAgentLaunched(Block{Content: "sync report"}) {
		t.Error("a plain prompt is not a prompt")
	}
}
