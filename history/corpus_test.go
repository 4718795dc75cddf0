package history

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The corpus under testdata/corpus is written from the format facts of the
// shared CLI reference (section 4) in the shapes of three CLI generations:
// 1.0.x (partial usage on the earlier lines of a response, inline parallel
// sidechains, an API error line, an interrupted turn, string toolUseResult),
// 2.0.x (a top-level agent file, IDE context and /clear wrappers before the
// prompt, an image in the prompt, hook and local-command system entries) and
// 2.1.x (subagents with meta files nested two deep, compaction, an image
// tool result, bookkeeping entries and an entry of an unknown type).
var corpusDir = filepath.Join("testdata", "corpus")

// corpusFiles returns every transcript of the corpus.
func corpusFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("corpus: %v (%d files)", err, len(out))
	}
	return out
}

// rawLine is what the independent reading of the corpus looks at.
type rawLine struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	RequestID string `json:"requestId"`
	IsMeta    bool   `json:"isMeta"`
	APIError  bool   `json:"isApiErrorMessage"`
	Message   *struct {
		ID      string          `json:"id"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
		Usage   *Usage          `json:"usage"`
	} `json:"message"`
}

func readRaw(t *testing.T, path string) []rawLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []rawLine
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r rawLine
		if err := json.Unmarshal(l, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	return out
}

// independentUsage sums usage over unique (message id, request id), each at
// its largest output count, skipping API errors.
func independentUsage(t *testing.T, paths []string) (in, out int64, calls int) {
	t.Helper()
	final := map[string]Usage{}
	for _, p := range paths {
		for _, r := range readRaw(t, p) {
			if r.Type != "assistant" || r.Message == nil || r.Message.Usage == nil || r.APIError || r.Message.Model == "<synthetic>" {
				continue
			}
			k := r.Message.ID + "\x00" + r.RequestID
			if u, ok := final[k]; !ok || r.Message.Usage.OutputTokens > u.OutputTokens {
				final[k] = *r.Message.Usage
			}
		}
	}
	for _, u := range final {
		in += u.InputTokens
		out += u.OutputTokens
	}
	return in, out, len(final)
}

// sessionFiles returns a corpus session's transcript and its subagents'.
func corpusSession(t *testing.T, sid string) (main string, all []string) {
	main = filepath.Join(corpusDir, "projects", "-home-dev-app", sid+".jsonl")
	return main, append([]string{main}, SessionFile{ID: sid, Path: main}.Subagents()...)
}

// expected lists what every export must show of a transcript: the texts a
// person or model wrote, tool names and ids, and tool results.
type expected struct{ texts, toolNames, toolIDs []string }

func (x *expected) add(t *testing.T, path string) {
	for _, r := range readRaw(t, path) {
		if r.Message == nil || (r.Type != "user" && r.Type != "assistant") {
			continue
		}
		c := bytes.TrimSpace(r.Message.Content)
		if len(c) > 0 && c[0] == '"' {
			var s string
			_ = json.Unmarshal(c, &s)
			if !r.IsMeta && !strings.HasPrefix(s, "<local-command-stdout></") {
				x.texts = append(x.texts, s)
			}
			continue
		}
		var blocks []Block
		if err := json.Unmarshal(c, &blocks); err != nil {
			t.Fatalf("%s: content %s: %v", path, c, err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				x.texts = append(x.texts, b.Text)
			case "thinking":
				x.texts = append(x.texts, b.Thinking)
			case "tool_use":
				x.toolNames = append(x.toolNames, b.Name)
				x.toolIDs = append(x.toolIDs, b.ID)
			case "tool_result":
				x.texts = append(x.texts, b.ResultText())
			}
		}
	}
}

// jsonStrings returns every string value in a JSON document, joined.
func jsonStrings(t *testing.T, doc []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("JSON export: %v", err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

func TestCorpusExportsShowEverything(t *testing.T) {
	ctx := context.Background()
	for _, sid := range []string{"1a000000-0000-4000-8000-00000000000a", "2b000000-0000-4000-8000-00000000000b", "3c000000-0000-4000-8000-00000000000c"} {
		t.Run(sid[:2], func(t *testing.T) {
			main, all := corpusSession(t, sid)
			var want expected
			for _, p := range all {
				want.add(t, p)
			}
			if len(all) < 2 && sid[:2] != "1a" {
				t.Fatalf("subagents of %s not found: %v", sid, all)
			}
			outs := map[Format]string{}
			for _, f := range []Format{FormatMarkdown, FormatJSON, FormatHTML, FormatText} {
				var buf bytes.Buffer
				if err := Export(ctx, &buf, main, ExportOptions{Format: f, Fold: -1}); err != nil {
					t.Fatalf("export %s: %v", f, err)
				}
				outs[f] = buf.String()
			}
			md, js := outs[FormatMarkdown], jsonStrings(t, []byte(outs[FormatJSON]))
			for _, s := range want.texts {
				inMD := s
				// A slash command's record reads as the command and its
				// output ("/compact", "Compacted"), without the CLI's tags.
				if _, text, ok := commandView(&Record{Type: "user", Blocks: []RBlock{{Type: "text", Text: s}}}); ok {
					inMD = text
				}
				// Nested subagents are blockquoted line by line in Markdown.
				for _, l := range strings.Split(strings.TrimSpace(inMD), "\n") {
					if !strings.Contains(md, l) {
						t.Errorf("Markdown lacks %q", l)
					}
				}
				if !strings.Contains(js, s) {
					t.Errorf("JSON lacks %q", s)
				}
			}
			for _, n := range want.toolNames {
				if !strings.Contains(md, "**"+n+"**") {
					t.Errorf("Markdown lacks the call of %s", n)
				}
			}
			for _, id := range want.toolIDs {
				if !strings.Contains(js, id) {
					t.Errorf("JSON lacks tool call %s", id)
				}
			}
			// Usage in the footer is the independent sum.
			in, out, calls := independentUsage(t, all)
			var doc struct{ Usage Totals }
			if err := json.Unmarshal([]byte(outs[FormatJSON]), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Usage.InputTokens != in || doc.Usage.OutputTokens != out || doc.Usage.APICalls != calls {
				t.Errorf("footer usage = %+v, want %d in, %d out, %d calls", doc.Usage.Tokens, in, out, calls)
			}
			if tu, err := TranscriptUsage(ctx, main, nil); err != nil || tu.OutputTokens != out || tu.APICalls != calls {
				t.Errorf("TranscriptUsage = %+v, %v; want %d out over %d calls", tu, err, out, calls)
			}
		})
	}
}

func TestCorpusUsageMatchesAnIndependentSum(t *testing.T) {
	c, err := Scan(context.Background(), corpusDir, ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	in, out, calls := independentUsage(t, corpusFiles(t))
	if tot := c.Total(); tot.InputTokens != in || tot.OutputTokens != out || tot.APICalls != calls {
		t.Errorf("usage = %+v over %d calls, want %d in, %d out over %d calls", tot.Tokens, tot.APICalls, in, out, calls)
	}
	if len(c.Sessions()) != 3 || len(c.Warnings) != 0 {
		t.Errorf("%d sessions, warnings %v; want 3 and none", len(c.Sessions()), c.Warnings)
	}
	subs := map[string]int{}
	for _, s := range c.Sessions() {
		subs[s.ID[:2]] = s.Subagents
	}
	if subs["1a"] != 2 || subs["2b"] != 1 || subs["3c"] != 2 {
		t.Errorf("subagents per session = %v, want 1a:2 (inline) 2b:1 (top level) 3c:2 (nested)", subs)
	}
}

func TestCorpusKeepsUnknownEntries(t *testing.T) {
	main, _ := corpusSession(t, "3c000000-0000-4000-8000-00000000000c")
	js := exportString(t, main, FormatJSON)
	var doc struct{ Entries []Record }
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range doc.Entries {
		if r.Type == "future-thing" && r.Unknown && strings.Contains(string(r.Raw), "UNKNOWN-ENTRY-PAYLOAD") {
			found = true
		}
		if r.Type == "progress" || r.Type == "file-history-snapshot" || r.Type == "queue-operation" {
			t.Errorf("bookkeeping entry %s exported", r.Type)
		}
	}
	if !found {
		t.Errorf("JSON export lacks the unknown entry:\n%s", js)
	}
	md := exportString(t, main, FormatMarkdown)
	if !strings.Contains(md, "Entry of unknown type future-thing") || !strings.Contains(md, "UNKNOWN-ENTRY-PAYLOAD") {
		t.Error("Markdown lacks the unknown entry")
	}
	html := exportString(t, main, FormatHTML)
	if !strings.Contains(html, "<details class=\"sys\"><summary>Entry of unknown type future-thing") {
		t.Error("HTML does not show the unknown entry folded")
	}
}
