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
