package history

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gold "github.com/pneuma-cli/pneuma/internal/testbed/golden"
)

// golden compares got with testdata/golden/name (go test -update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	gold.Check(t, "golden/"+name, got)
}

var secrets = []string{
	"sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "AKIAIOSFODNN7EXAMPLE", "ghp_abcdefghijklmnopqrstuvwxyz0123",
	"abcdef0123456789xyz", "hunter2hunter2",
}

func TestExportGolden(t *testing.T) {
	sessions := map[string]string{
		"resumed-with-subagent": filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl"),
		"fork":                  filepath.Join("testdata", "projects", "-home-me-proj", sidB+".jsonl"),
		"compacted":             filepath.Join("testdata", "projects", "-srv-other", sidC+".jsonl"),
	}
	for name, path := range sessions {
		for _, f := range []Format{FormatMarkdown, FormatJSON, FormatHTML, FormatText} {
			t.Run(name+"."+string(f), func(t *testing.T) {
				var buf bytes.Buffer
				if err := Export(context.Background(), &buf, path, ExportOptions{Format: f}); err != nil {
					t.Fatal(err)
				}
				// Golden files must not depend on where the repository lives.
				out := bytes.ReplaceAll(buf.Bytes(), []byte(path), []byte("SESSION.jsonl"))
				for _, s := range secrets {
					if bytes.Contains(out, []byte(s)) {
						t.Errorf("secret %q leaked into the %s export", s, f)
					}
				}
				switch f {
				case FormatJSON:
					var v map[string]any
					if err := json.Unmarshal(out, &v); err != nil {
						t.Fatalf("JSON export does not parse: %v", err)
					}
				case FormatHTML:
					for _, bad := range []string{"http://", "https://", "<script", "src="} {
						if bytes.Contains(out, []byte(bad)) {
							t.Errorf("HTML export holds %q: it must be self-contained", bad)
						}
					}
				}
				golden(t, name+"."+string(f), out)
			})
		}
	}
}

func TestExportNestsSubagent(t *testing.T) {
	var buf bytes.Buffer
	path := filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl")
	if err := Export(context.Background(), &buf, path, ExportOptions{Format: FormatJSON}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema  string `json:"schema"`
		Entries []struct {
			Type    string `json:"type"`
			AgentID string `json:"agent_id"`
			Entries []struct {
				Type string `json:"type"`
			} `json:"entries"`
			Blocks []RBlock `json:"blocks"`
		} `json:"entries"`
		Usage Totals    `json:"usage"`
		Stats ReadStats `json:"read_stats"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// The subagent follows the assistant entry whose Agent call started it,
	// before that call's result.
	for i, e := range doc.Entries {
		if e.Type != "subagent" {
			continue
		}
		prev, next := doc.Entries[i-1], doc.Entries[i+1]
		if e.AgentID != "aab48416e4424e297" || len(e.Entries) != 4 || prev.Blocks[0].Name != "Agent" || next.Blocks[0].Type != "tool_result" {
			t.Errorf("subagent misplaced: %+v", e)
		}
		if doc.Usage.APICalls != 5 || doc.Stats.Torn != 1 || doc.Stats.Malformed != 1 || doc.Schema != ExportSchema {
			t.Errorf("footer = %+v %+v", doc.Usage, doc.Stats)
		}
		return
	}
	t.Fatal("no subagent in the export")
}

func TestExportFoldsLongToolResults(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line of output\n", 5000)
	line := func(v any) string { b, _ := json.Marshal(v); return string(b) + "\n" }
	data := line(map[string]any{"type": "assistant", "uuid": "a", "message": map[string]any{"id": "m", "model": "claude-opus-4-8", "role": "assistant",
		"content": []any{map[string]any{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "yes | head"}}}}}) +
		line(map[string]any{"type": "user", "uuid": "b", "message": map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": big}}}})
	p := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Format{FormatMarkdown, FormatHTML, FormatText} {
		var buf bytes.Buffer
		if err := Export(context.Background(), &buf, p, ExportOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		if buf.Len() > 30000 || !strings.Contains(buf.String(), "more lines folded") {
			t.Errorf("%s: %d bytes, tool result not folded", f, buf.Len())
		}
	}
}

// TestRedactJSON checks that secrets are redacted in every string of a
// tool input, however deeply nested (the patterns are tested in
// internal/redact).
func TestRedactJSON(t *testing.T) {
	raw := json.RawMessage(`{"command":"curl -H \"Authorization: Bearer abcdefgh12345678\" https://x","env":{"AWS":"AKIAIOSFODNN7EXAMPLE"}}`)
	out := string(redactJSON(raw))
	if strings.Contains(out, "abcdefgh12345678") || strings.Contains(out, "AKIA") || !json.Valid([]byte(out)) {
		t.Errorf("redactJSON = %s", out)
	}
	// A secret-named key hides a value that looks like a secret, not a
	// word, a literal or nothing.
	raw = json.RawMessage(`{"url":"https://x","headers":{"X-Api-Key":"Zx8Qw3Lp9Rt2Vb7N","Accept":"text/plain"},"max_tokens":"5","password":"hunter2!","primary_key":"id","token":""}`)
	want := `{"headers":{"Accept":"text/plain","X-Api-Key":"[REDACTED]"},"max_tokens":"5","password":"[REDACTED]","primary_key":"id","token":"","url":"https://x"}`
	if out := string(redactJSON(raw)); out != want {
		t.Errorf("redactJSON of secret-named keys = %s, want %s", out, want)
	}
}

func FuzzReadTranscript(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl"))
	f.Add(seed)
	// Every transcript of the real-shapes corpus (three CLI generations).
	for _, p := range corpusFiles(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"assistant","message":{"content":{"odd":true},"usage":"x"}}` + "\n"))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"image"}]}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		p := filepath.Join(dir, "s.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, f := range []Format{FormatMarkdown, FormatJSON, FormatHTML} {
			var buf bytes.Buffer
			if err := Export(ctx, &buf, p, ExportOptions{Format: f}); err != nil {
				t.Fatalf("export %s: %v", f, err)
			}
			if f == FormatJSON && !json.Valid(buf.Bytes()) {
				t.Fatalf("JSON export is not valid JSON:\n%s", buf.Bytes())
			}
		}
		if _, err := TranscriptUsage(ctx, p, nil); err != nil {
			t.Fatalf("usage: %v", err)
		}
		tr, err := ReadTranscript(ctx, p)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		_ = tr.Thread()
	})
}

func TestThread(t *testing.T) {
	ctx := context.Background()
	tr, err := ReadTranscript(ctx, filepath.Join("testdata", "projects", "-srv-other", sidC+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	th := tr.Thread()
	// The compaction boundary has parentUuid null; the thread continues
	// through logicalParentUuid back to the first prompt.
	if len(th) != 6 || th[0].UUID != "0000012d-0000-4000-8000-00000000012d" || th[2].Subtype != "compact_boundary" {
		var ids []string
		for _, e := range th {
			ids = append(ids, e.Type+"/"+e.UUID)
		}
		t.Errorf("thread = %v", ids)
	}
	tr, err = ReadTranscript(ctx, filepath.Join("testdata", "projects", "-home-me-proj", sidA+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if sa := tr.SubagentFor("toolu_agent1"); sa == nil || len(sa.Entries) != 4 || sa.Meta.AgentType != "general-purpose" {
		t.Errorf("subagent for toolu_agent1 = %+v", sa)
	}
	if tr.Stats.Malformed != 1 || tr.Stats.Torn != 1 {
		t.Errorf("stats = %+v", tr.Stats)
	}
}

// TestExportCompactionFixture_2_1_332: a session CLI 2.1.332 compacted with
// /compact (its transcript, less attachments and request bookkeeping). The
// export marks the compaction with its trigger and size, shows the CLI's
// summary as a summary and the command as a command (never as a prompt),
// and its usage counts the two answers, saying the compaction is not.
func TestExportCompactionFixture_2_1_332(t *testing.T) {
	path := filepath.Join("testdata", "compaction-2.1.332.jsonl")
	export := func(f Format) string {
		var buf bytes.Buffer
		if err := Export(context.Background(), &buf, path, ExportOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	var doc struct {
		Entries     []Record `json:"entries"`
		Usage       Totals   `json:"usage"`
		Compactions int      `json:"compactions"`
	}
	if err := json.Unmarshal([]byte(export(FormatJSON)), &doc); err != nil {
		t.Fatal(err)
	}
	var boundaries, summaries int
	for _, r := range doc.Entries {
		if r.Subtype == "compact_boundary" {
			boundaries++
			if r.Compaction == nil || *r.Compaction != (Compaction{Trigger: "manual", PreTokens: 1100}) {
				t.Errorf("compaction %+v, want manual with 1100 tokens before", r.Compaction)
			}
		}
		if r.CompactSummary {
			summaries++
		}
	}
	if boundaries != 1 || summaries != 1 || doc.Compactions != 1 {
		t.Errorf("%d boundaries, %d summaries, footer %d compactions: want 1 each", boundaries, summaries, doc.Compactions)
	}
	if doc.Usage.APICalls != 2 || doc.Usage.InputTokens != 1100 {
		t.Errorf("usage %+v, want the two answers (1,000 + 100 input tokens)", doc.Usage)
	}

	md := export(FormatMarkdown)
	for _, want := range []string{
		"### Conversation compacted (manual, 1,100 tokens before) · 04:09:36",
		"### Summary of earlier conversation · 04:09:36\n\nThis session is being continued",
		"### Command · 04:09:35\n\n/compact\n",
		"### Command output · 04:09:36\n\nCompacted\n",
		"Not counted: 1 compaction",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "### User ·"); n != 2 || strings.Contains(md, "<command-name>") {
		t.Errorf("%d user headings (want the 2 prompts), or the command's raw tags:\n%s", n, md)
	}
	if h := export(FormatHTML); !strings.Contains(h, `<p class="sys compact">Conversation compacted (manual, 1,100 tokens before)`) {
		t.Errorf("HTML lacks the compaction marker")
	}
}

func TestCompactionTitle(t *testing.T) {
	for _, c := range []struct {
		in   *Compaction
		want string
	}{
		{nil, "Conversation compacted"},
		{&Compaction{}, "Conversation compacted"},
		{&Compaction{Trigger: "auto", PreTokens: 167000}, "Conversation compacted (auto, 167,000 tokens before)"},
		{&Compaction{Trigger: "manual"}, "Conversation compacted (manual)"},
		// A hand-edited trigger is no place for markup or lines.
		{&Compaction{Trigger: "<b>x</b>\n# y", PreTokens: 5}, "Conversation compacted (5 tokens before)"},
	} {
		if got := compactionTitle(c.in); got != c.want {
			t.Errorf("compactionTitle(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}
