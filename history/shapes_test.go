package history

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestOddShapesAreKeptAndCounted: a message whose content is an object or
// a number, and a usage with "3.0", are shown (not dropped) with a note in
// the footer, and show and usage agree on the tokens.
func TestOddShapesAreKeptAndCounted(t *testing.T) {
	ctx := context.Background()
	const sid = "d0000000-0000-4000-8000-000000000000"
	path := filepath.Join(t.TempDir(), "projects", "-p", sid+".jsonl")
	jsonl(t, path,
		userLine(sid, "u1", "", obj{"type": "text", "text": "OBJECT-CONTENT prompt"}, nil),
		obj{"type": "assistant", "uuid": "a1", "parentUuid": "u1", "requestId": "r1", "timestamp": "2026-11-20T10:00:01Z",
			"message": obj{"id": "m1", "model": "claude-sonnet-4-5-20250929", "content": []any{textB("NUMBER-USAGE answer"), 42},
				"usage": json.RawMessage(`{"input_tokens":10,"output_tokens":3.0}`)}},
		obj{"type": "assistant", "uuid": "a2", "parentUuid": "a1", "requestId": "r2", "timestamp": "2026-11-20T10:00:02Z",
			"message": obj{"id": "m2", "model": "claude-sonnet-4-5-20250929", "content": 7, "usage": obj{"input_tokens": 5, "output_tokens": 4}}},
	)
	md := exportString(t, path, FormatMarkdown)
	for _, want := range []string{"OBJECT-CONTENT prompt", "NUMBER-USAGE answer", "Unreadable part", "42", "unexpected shape"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	var doc struct {
		Usage Totals    `json:"usage"`
		Stats ReadStats `json:"read_stats"`
	}
	if err := json.Unmarshal([]byte(exportString(t, path, FormatJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	tu, err := TranscriptUsage(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Usage.OutputTokens != 7 || tu.OutputTokens != 7 || doc.Usage.APICalls != 2 || tu.APICalls != 2 {
		t.Errorf("show counts %+v, usage %+v; want 7 output tokens over 2 calls in both", doc.Usage.Tokens, tu.Tokens)
	}
	if doc.Stats.Repaired != 2 || doc.Stats.Malformed != 0 {
		t.Errorf("read stats = %+v, want 2 repaired, 0 malformed", doc.Stats)
	}
}

func TestScanLineAcceptsDeepNesting(t *testing.T) {
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	line := `{"type":"assistant","requestId":"r","message":{"id":"m","content":[{"type":"tool_use","input":{"x":` + deep + `}}],"usage":{"output_tokens":9}}}`
	var li lineInfo
	if err := scanLine([]byte(line), &li, false); err != nil || !strIs(li.msgID, "m") || li.usage == nil {
		t.Errorf("scanLine of valid JSON nested 200 deep: %v, %+v", err, li)
	}
	for _, bad := range []string{`{"a":` + strings.Repeat("[", 100) + `}`, `{"a":[}]}`} {
		if err := scanLine([]byte(bad), &li, false); err == nil {
			t.Errorf("scanLine(%.40q…) accepted unbalanced brackets", bad)
		}
	}
}

func TestFirstPromptIsWhatThePersonTyped(t *testing.T) {
	c, err := Scan(context.Background(), corpusDir, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"1a": "Add a CSV export to the report page.",
		"2b": "What does main.go do? Here is a screenshot.",
		"3c": "Refactor the parser.",
	}
	for _, s := range c.Sessions() {
		if w := want[s.ID[:2]]; s.FirstPrompt != w {
			t.Errorf("first prompt of %s = %q, want %q", s.ID[:2], s.FirstPrompt, w)
		}
	}
	for in, want := range map[string]string{
		"<ide_selection>x</ide_selection>\n<system-reminder>y</system-reminder> Fix it": "Fix it",
		"<ide_opened_file>never closed": "",
		"plain":                         "plain",
	} {
		if got := promptContent(in); got != want {
			t.Errorf("promptContent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseUsageAgreesWithJSON(t *testing.T) {
	for _, in := range []string{
		`{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":4000,"output_tokens":96,"service_tier":"standard"}`,
		`{"input_tokens":1,"output_tokens":3.0,"cache_creation":{"ephemeral_5m_input_tokens":7,"ephemeral_1h_input_tokens":2e1},"server_tool_use":{"web_search_requests":0}}`,
		`{"output_tokens":123456789012,"iterations":[],"speed":"standard"}`,
		`{}`,
	} {
		var want, got Usage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if err := parseUsage([]byte(in), &got); err != nil || got != want {
			t.Errorf("parseUsage(%s) = %+v, %v; encoding/json: %+v", in, got, err, want)
		}
	}
}

func TestCutToolUseResult(t *testing.T) {
	big := strings.Repeat("x", 70<<10)
	for _, tt := range []struct{ in, rest string }{
		{`{"type":"user","toolUseResult":{"agentId":"a1","stdout":"` + big + `"},"uuid":"u"}`, `{"type":"user","uuid":"u"}`},
		{`{"toolUseResult":{"agentId":"a1","stdout":"` + big + `"} , "type":"user"}`, `{ "type":"user"}`},
		{`{"type":"user","message":{"content":"` + big + `"},"toolUseResult":{"agentId":"a1"}}`, `{"type":"user","message":{"content":"` + big + `"}}`},
	} {
		rest, tur := cutToolUseResult([]byte(tt.in))
		if string(rest) != tt.rest || !json.Valid(rest) {
			t.Errorf("rest = %.80s…", rest)
		}
		e, err := ParseEntry([]byte(tt.in))
		if err != nil || e.ResultAgentID() != "a1" || !json.Valid(tur) {
			t.Errorf("ParseEntry: %v, agent %q", err, e.ResultAgentID())
		}
	}
}
