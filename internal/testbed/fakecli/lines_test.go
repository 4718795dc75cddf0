package fakecli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLinesAreJSON(t *testing.T) {
	status := 500
	lines := map[string]string{
		"init":        InitLine("sid"),
		"text":        AssistantText("sid", "msg_1", "hi"),
		"tool_use":    ToolUseLine("sid", "msg_1", "toolu_1", "Write", map[string]any{"file_path": "/a"}),
		"tool_result": ToolResultLine("sid", "toolu_1", "done", false),
		"can_use":     CanUseToolLine("req_1", "Write", "toolu_1", map[string]any{"file_path": "/a"}),
		"result":      ResultLine("sid", ResultOpts{IsError: true, APIErrorStatus: &status, Errors: []string{"boom"}}),
		"retry":       APIRetryLine("sid", 1, 10, 565.51, 500, "server_error"),
	}
	for name, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.Contains(l, "\n") || v["type"] == nil {
			t.Errorf("%s: not one typed line: %s", name, l)
		}
	}
}

func TestBigLine(t *testing.T) {
	for _, n := range []int{10, 1000, 5 << 20} {
		l := bigLine("0b5c6a52-3a3c-4d61-9f6b-2f3b5f1f2e11", n)
		if !json.Valid([]byte(l)) {
			t.Fatalf("bigLine(%d) is not JSON", n)
		}
		if n >= 1000 && len(l) != n {
			t.Errorf("bigLine(%d) has %d bytes", n, len(l))
		}
	}
}
