package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// partialLine is an assistant line as CLIs that wrote partial counts wrote
// it: every content block of a response is a line with the same message id
// and request id; output_tokens is the running count on the earlier lines.
func partialLine(sid, uuid, parent, msgID, reqID string, out int64, block string) string {
	return fmt.Sprintf(`{"parentUuid":%q,"isSidechain":false,"type":"assistant","uuid":%q,"timestamp":"2026-11-20T10:00:%02dZ","sessionId":%q,"cwd":"/home/me/part","version":"1.0.17","requestId":%q,`+
		`"message":{"id":%q,"role":"assistant","model":"claude-sonnet-4-5-20250929","content":[%s],"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":%d}}}`,
		parent, uuid, len(uuid)%60, sid, reqID, msgID, block, out)
}

// writePartialTree writes a session whose responses carry partial counts on
// their earlier lines, and a fork that copies it and adds one response.
// It returns the config dir, the session file and the independent sum of
// output tokens over unique (message id, request id), final line each.
func writePartialTree(t *testing.T) (cfg, session string, wantOut int64) {
	t.Helper()
	cfg = t.TempDir()
	proj := filepath.Join(cfg, "projects", "-home-me-part")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	text := func(s string) string { return fmt.Sprintf(`{"type":"text","text":%q}`, s) }
	tool := func(id string) string {
		return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"ls"}}`, id)
	}
	user := func(uuid, parent, content string) string {
		return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","uuid":%q,"timestamp":"2026-11-20T10:00:00Z","sessionId":"s1","cwd":"/home/me/part","message":{"role":"user","content":%s}}`,
			parent, uuid, content)
	}
	lines := []string{
		user("u1", "null", `"Count the files."`),
		// Response 1: thinking, text, tool_use; counts 1, 5, then the final 240.
		partialLine("s1", "a1", "u1", "msg_1", "req_1", 1, `{"type":"thinking","thinking":"hmm","signature":"x"}`),
		partialLine("s1", "a2", "a1", "msg_1", "req_1", 5, text("Let me look.")),
		partialLine("s1", "a3", "a2", "msg_1", "req_1", 240, tool("toolu_1")),
		user("u2", `"a3"`, `[{"type":"tool_result","tool_use_id":"toolu_1","content":"a\nb"}]`),
		// Response 2: two lines, 11 then 30.
		partialLine("s1", "a4", "u2", "msg_2", "req_2", 11, text("Two files.")),
		partialLine("s1", "a5", "a4", "msg_2", "req_2", 30, text("Done.")),
	}
	wantOut = 240 + 30
	session = filepath.Join(proj, "s1.jsonl")
	if err := os.WriteFile(session, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The fork copies every line (same ids, timestamps) and adds response 3.
	fork := append([]string{`{"type":"mode","mode":"normal","sessionId":"s2"}`}, lines...)
	fork = append(fork, user("u3", `"a5"`, `"And now?"`),
		partialLine("s2", "a6", "u3", "msg_3", "req_3", 2, text("Now")),
		partialLine("s2", "a7", "a6", "msg_3", "req_3", 77, text("nothing.")))
	if err := os.WriteFile(filepath.Join(proj, "s2.jsonl"), []byte(strings.Join(fork, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, session, wantOut
}

func TestUsageTakesFinalLineOfResponse(t *testing.T) {
	ctx := context.Background()
	cfg, session, wantOut := writePartialTree(t)

	tu, err := TranscriptUsage(ctx, session, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tu.OutputTokens != wantOut || tu.APICalls != 2 || tu.InputTokens != 20 {
		t.Errorf("TranscriptUsage = %+v, want output %d over 2 calls", tu.Tokens, wantOut)
	}
	// sonnet-4.5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per MTok.
	wantCost := (20*3 + float64(wantOut)*15 + 200*3.75 + 2000*0.3) / 1e6
	if !near(tu.CostUSD, wantCost) {
		t.Errorf("cost = %v, want %v", tu.CostUSD, wantCost)
	}

	c, err := Scan(ctx, cfg, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]UsageRow{}
	for _, r := range c.UsageBy(BySession, nil) {
		by[r.SessionID] = r
	}
	if got := by["s1"]; got.OutputTokens != wantOut || got.APICalls != 2 {
		t.Errorf("usage of s1 = %+v, want output %d", got.Tokens, wantOut)
	}
	// The fork is charged only for its own response, at its final count.
	if got := by["s2"]; got.OutputTokens != 77 || got.APICalls != 1 {
		t.Errorf("usage of the fork = %+v, want output 77 over 1 call", got.Tokens)
	}
	if got := c.Total().OutputTokens; got != wantOut+77 {
		t.Errorf("total output = %d, want %d", got, wantOut+77)
	}
	for _, s := range c.Sessions() {
		if s.ID == "s1" && s.OutputTokens != wantOut {
			t.Errorf("list row of s1: output %d, want %d", s.OutputTokens, wantOut)
		}
	}

	// Show: the footer in every format, and in JSON the per-record usage
	// sits on the last line of each response.
	var buf bytes.Buffer
	if err := Export(ctx, &buf, session, ExportOptions{Format: FormatJSON}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []Record `json:"entries"`
		Usage   Totals   `json:"usage"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("json export: %v\n%s", err, buf.Bytes())
	}
	if doc.Usage.OutputTokens != wantOut || !near(doc.Usage.CostUSD, wantCost) {
		t.Errorf("json footer = %+v, want output %d cost %v", doc.Usage, wantOut, wantCost)
	}
	var sum int64
	var carriers []string
	for _, r := range doc.Entries {
		if r.Usage != nil {
			sum += r.Usage.OutputTokens
			carriers = append(carriers, r.UUID)
		}
	}
	if sum != wantOut || strings.Join(carriers, ",") != "a3,a5" {
		t.Errorf("records carry output %d on %v, want %d on [a3 a5]", sum, carriers, wantOut)
	}
	for _, f := range []Format{FormatMarkdown, FormatText, FormatHTML} {
		buf.Reset()
		if err := Export(ctx, &buf, session, ExportOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), fmt.Sprintf("%d output", wantOut)) {
			t.Errorf("%s footer lacks %d output tokens:\n%s", f, wantOut, lastLines(buf.String(), 4))
		}
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// TestUsageScanOfLongLines: tool results longer than the line reader's
// buffer are read past, and assistant lines longer than it are read whole,
// their head (cwd, session) kept right when the buffer moves under them.
func TestUsageScanOfLongLines(t *testing.T) {
	cfg := t.TempDir()
	proj := filepath.Join(cfg, "projects", "-home-me-long")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	user := func(uuid string, size int) string {
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"cwd":"/home/me/long","sessionId":"s1","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":%q}]},"uuid":%q,"timestamp":"2026-11-20T10:00:00Z"}`,
			strings.Repeat("u", size), uuid)
	}
	// The CLI's order: message before type.
	asst := func(uuid, msgID, reqID string, out int64, size int) string {
		cwd := "/home/me/long"
		if size < 100 {
			cwd = "/home/me/elsewhere" // the project is the first line's
		}
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"cwd":%q,"sessionId":"s1","message":{"id":%q,"model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":%d}},"requestId":%q,"type":"assistant","uuid":%q,"timestamp":"2026-11-20T10:00:01Z"}`,
			cwd, msgID, strings.Repeat("a", size), out, reqID, uuid)
	}
	// The first line's size puts the long assistant line at several places
	// of the buffer.
	for _, first := range []int{10, 100 << 10, 300 << 10, 700 << 10} {
		lines := []string{
			user("u1", first),
			asst("a1", "msg_1", "req_1", 5, 900<<10), // crosses the buffer's end
			asst("a2", "msg_1", "req_1", 50, 10),
			user("u2", 3<<20),                      // longer than the buffer
			asst("a3", "msg_2", "req_2", 7, 5<<19), // grows it
			user("u3", 10),
		}
		if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Scan(context.Background(), cfg, ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := c.Sessions()
		if len(s) != 1 {
			t.Fatalf("%d sessions, want 1", len(s))
		}
		if got := *s[0]; got.Project != "/home/me/long" || got.OutputTokens != 57 || got.APICalls != 2 || got.Stats.Lines != 6 {
			t.Errorf("first line of %d bytes: project %q, %d calls, %d output tokens, %d lines; want /home/me/long, 2, 57, 6",
				first, got.Project, got.APICalls, got.OutputTokens, got.Stats.Lines)
		}
	}
}
