package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxFoldLines is how many lines of a tool input or result a folded export keeps.
const maxFoldLines = 60

// fold cuts s to about n characters and maxFoldLines lines, saying what it
// left out. n <= 0 keeps everything.
func fold(s string, n int) string {
	if n <= 0 {
		return s
	}
	cut := len(s)
	if cut > n {
		cut = n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	lines := 0
	for i := 0; i < cut; i++ {
		if s[i] == '\n' {
			lines++
			if lines == maxFoldLines {
				cut = i
				break
			}
		}
	}
	if cut >= len(s) {
		return s
	}
	rest := s[cut:]
	return fmt.Sprintf("%s\n… [%d more characters, %d more lines folded]",
		strings.TrimRight(s[:cut], "\n"), len(rest), strings.Count(rest, "\n"))
}

// toolView is how a tool call reads: a title line and an optional body.
type toolView struct {
	title, body, lang string
}

// viewToolUse summarises well-known tools (others show their input as
// JSON), folded to n characters and redacted.
func viewToolUse(name string, input json.RawMessage, n int) toolView {
	v := rawToolView(name, input)
	v.title = (fold(v.title, 200))
	v.body = (fold(v.body, n))
	return v
}

func rawToolView(name string, input json.RawMessage) toolView {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch name {
	case "Bash":
		return toolView{title: str("description"), body: str("command"), lang: "sh"}
	case "Read":
		return toolView{title: str("file_path")}
	case "Write":
		return toolView{title: str("file_path"), body: str("content"), lang: langOf(str("file_path"))}
	case "Edit":
		var b strings.Builder
		for _, l := range strings.Split(str("old_string"), "\n") {
			b.WriteString("- " + l + "\n")
		}
		for _, l := range strings.Split(str("new_string"), "\n") {
			b.WriteString("+ " + l + "\n")
		}
		return toolView{title: str("file_path"), body: strings.TrimSuffix(b.String(), "\n"), lang: "diff"}
	case "Agent", "Task":
		t := str("description")
		if st := str("subagent_type"); st != "" {
			t = st + ": " + t
		}
		return toolView{title: t, body: str("prompt")}
	case "Glob", "Grep":
		t := str("pattern")
		if p := str("path"); p != "" {
			t += " in " + p
		}
		return toolView{title: t}
	case "WebFetch", "WebSearch":
		return toolView{title: str("url") + str("query"), body: str("prompt")}
	}
	if len(in) == 0 {
		return toolView{}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, input, "", "  ") != nil {
		return toolView{body: string(input), lang: "json"}
	}
	return toolView{body: buf.String(), lang: "json"}
}

func langOf(path string) string {
	switch filepath.Ext(path) {
	case ".go":
		return "go"
	case ".py":
		return "python"
	case ".js", ".mjs":
		return "js"
	case ".ts":
		return "ts"
	case ".sh":
		return "sh"
	case ".json":
		return "json"
	case ".yaml", ".yml":
		return "yaml"
	case ".md":
		return "markdown"
	}
	return ""
}

// skipInProse reports records a reading export leaves out: text the CLI
// injected (isMeta) and local command echoes. The JSON export keeps them.
func skipInProse(r *Record) bool {
	if r.Meta {
		return true
	}
	if r.Type == "user" && len(r.Blocks) == 1 && r.Blocks[0].Type == "text" {
		t := r.Blocks[0].Text
		return strings.HasPrefix(t, "<local-command-caveat>") || strings.HasPrefix(t, "<local-command-stdout></local-command-stdout>")
	}
	return false
}

// prefixWriter prefixes every line written through it (blockquotes for
// nested subagents in Markdown, indentation in text).
type prefixWriter struct {
	w      io.Writer
	prefix string
	bol    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if p.prefix == "" {
		return p.w.Write(b)
	}
	var out []byte
	for _, c := range b {
		if p.bol {
			out = append(out, p.prefix...)
			p.bol = false
		}
		out = append(out, c)
		if c == '\n' {
			p.bol = true
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// prose renders Markdown (md true) or plain text.
type prose struct {
	out  *bufio.Writer
	pw   *prefixWriter
	md   bool
	fold int
	err  error
}

func newMarkdown(w io.Writer, fold int) renderer { return newProse(w, fold, true) }
func newText(w io.Writer, fold int) renderer     { return newProse(w, fold, false) }

func newProse(w io.Writer, fold int, md bool) *prose {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &prose{out: bw, pw: &prefixWriter{w: bw, bol: true}, md: md, fold: fold}
}

func (p *prose) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.pw, format, a...)
	}
}

func (p *prose) setDepth(depth int) {
	if p.md {
		p.pw.prefix = strings.Repeat("> ", depth)
	} else {
		p.pw.prefix = strings.Repeat("    ", depth)
	}
}

func (p *prose) begin(h Header) error {
	if p.md {
		p.printf("# Claude Code session %s\n\n", h.SessionID)
		if h.Project != "" {
			p.printf("- Project: `%s`\n", h.Project)
		}
		if h.GitBranch != "" {
			p.printf("- Branch: `%s`\n", h.GitBranch)
		}
		if h.Version != "" {
			p.printf("- Claude Code: %s\n", h.Version)
		}
		if !h.Started.IsZero() {
			p.printf("- Started: %s\n", h.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
		}
		p.printf("\n---\n\n")
		return p.flush()
	}
	p.printf("Claude Code session %s\n", h.SessionID)
	if h.Project != "" {
		p.printf("Project: %s\n", h.Project)
	}
	if h.GitBranch != "" {
		p.printf("Branch:  %s\n", h.GitBranch)
	}
	if h.Version != "" {
		p.printf("CLI:     %s\n", h.Version)
	}
	if !h.Started.IsZero() {
		p.printf("Started: %s\n", h.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	p.printf("\n")
	return p.flush()
}

func (p *prose) flush() error {
	if p.err != nil {
		return p.err
	}
	return p.out.Flush()
}

func clock(r *Record) string {
	if r.Timestamp.IsZero() {
		return ""
	}
	return r.Timestamp.UTC().Format("15:04:05")
}

func (p *prose) heading(depth int, title string, parts ...string) {
	var meta []string
	for _, s := range parts {
		if s != "" {
			meta = append(meta, s)
		}
	}
	if p.md {
		level := min(3+depth, 6)
		p.printf("%s %s", strings.Repeat("#", level), title)
		if len(meta) > 0 {
			p.printf(" · %s", strings.Join(meta, " · "))
		}
		p.printf("\n\n")
		return
	}
	p.printf("== %s", strings.ToUpper(title))
	if len(meta) > 0 {
		p.printf(" (%s)", strings.Join(meta, ", "))
	}
	p.printf("\n\n")
}

func (p *prose) code(body, lang string) {
	if p.md {
		fence := "```"
		for strings.Contains(body, fence) {
			fence += "`"
		}
		p.printf("%s%s\n%s\n%s\n", fence, lang, body, fence)
		return
	}
	for _, l := range strings.Split(body, "\n") {
		p.printf("  | %s\n", l)
	}
}

func (p *prose) record(r *Record, depth int) error {
	if skipInProse(r) {
		return nil
	}
	p.setDepth(depth)
	switch {
	case r.Type == "summary":
		p.heading(depth, "Session title")
		p.printf("%s\n\n", strings.TrimSpace(r.Title))
		return p.err
	case r.Unknown:
		p.heading(depth, "Entry of unknown type "+strings.ReplaceAll(r.Type, "`", "'"), clock(r))
		p.code(fold(string(r.Raw), p.fold), "json")
		p.printf("\n")
		return p.err
	}
	switch r.Type {
	case "system":
		if r.Subtype == "compact_boundary" {
			p.heading(depth, compactionTitle(r.Compaction), clock(r))
			p.printf("%s\n\n", compactionNote)
			return p.err
		}
		title := "System"
		if r.Subtype != "" {
			title = "System: " + r.Subtype
		}
		p.heading(depth, title, clock(r))
		if t := r.Blocks[0].Text; t != "" {
			p.printf("%s\n\n", (fold(t, p.fold)))
		}
		return p.err
	case "user":
		if onlyToolResults(r) {
			break
		}
		if label, text, ok := commandView(r); ok {
			p.heading(depth, label, clock(r))
			p.printf("%s\n\n", fold(text, p.fold))
			return p.err
		}
		switch {
		case r.CompactSummary:
			p.heading(depth, "Summary of earlier conversation", clock(r))
		default:
			p.heading(depth, "User", clock(r))
		}
	case "assistant":
		if r.APIError {
			p.heading(depth, "API error", clock(r))
		} else if !r.Continued {
			p.heading(depth, "Assistant", r.Model, clock(r))
		}
	}
	for _, b := range r.Blocks {
		p.block(b, r.CompactSummary)
	}
	return p.err
}

func onlyToolResults(r *Record) bool {
	for _, b := range r.Blocks {
		if b.Type != "tool_result" {
			return false
		}
	}
	return len(r.Blocks) > 0
}

func (p *prose) block(b RBlock, compact bool) {
	switch b.Type {
	case "text":
		t := b.Text
		if compact {
			t = fold(t, p.fold)
		}
		p.printf("%s\n\n", strings.TrimSpace((t)))
	case "thinking":
		if strings.TrimSpace(b.Text) == "" {
			return
		}
		if p.md {
			p.printf("*Thinking:* %s\n\n", strings.ReplaceAll(strings.TrimSpace((fold(b.Text, p.fold))), "\n", " "))
		} else {
			p.printf("(thinking) %s\n\n", strings.TrimSpace((fold(b.Text, p.fold))))
		}
	case "tool_use", "server_tool_use":
		v := viewToolUse(b.Name, b.Input, p.fold)
		if p.md {
			p.printf("**%s**", b.Name)
			if v.title != "" {
				p.printf(" `%s`", strings.ReplaceAll(v.title, "`", "'"))
			}
			p.printf("\n")
		} else {
			p.printf("-> %s %s\n", b.Name, v.title)
		}
		if v.body != "" {
			p.code(v.body, v.lang)
		}
		p.printf("\n")
	case "tool_result":
		label := "Result"
		if b.ToolName != "" {
			label = b.ToolName + " result"
		}
		if b.IsError {
			label += " (error)"
		}
		if p.md {
			p.printf("*%s:*\n", label)
		} else {
			p.printf("<- %s\n", label)
		}
		body := strings.TrimRight((fold(b.Text, p.fold)), "\n")
		if body == "" {
			body = "(empty)"
		}
		p.code(body, "")
		p.printf("\n")
	case Unreadable:
		if p.md {
			p.printf("*Unreadable part (unexpected shape), as written:*\n")
		} else {
			p.printf("<- unreadable part (unexpected shape), as written:\n")
		}
		p.code(fold(b.Text, p.fold), "json")
		p.printf("\n")
	default:
		p.printf("[%s]\n\n", b.Type)
	}
}

func (p *prose) beginSub(r *Record, depth int) error {
	p.setDepth(depth + 1)
	title := "Subagent"
	if r.AgentType != "" {
		title += " " + r.AgentType
	}
	p.heading(depth, title, (r.Description), r.AgentID)
	return p.err
}

func (p *prose) endSub(r *Record, depth int) error {
	p.setDepth(depth + 1)
	if p.md {
		p.printf("*End of subagent %s*\n", r.AgentID)
	} else {
		p.printf("== END OF SUBAGENT %s\n", r.AgentID)
	}
	p.setDepth(depth)
	p.printf("\n")
	return p.err
}

func (p *prose) end(f Footer) error {
	p.setDepth(0)
	u := f.Usage
	if p.md {
		p.printf("---\n\n**Usage** (estimated from the transcript, deduplicated): %s\n", usageLine(u))
	} else {
		p.printf("== USAGE (estimated from the transcript, deduplicated)\n\n%s\n", usageLine(u))
	}
	if f.Compactions > 0 {
		p.printf("\n%s\n", compactionsLine(f.Compactions))
	}
	if s := statsLine(f.Stats); s != "" {
		p.printf("\nSkipped while reading: %s\n", s)
	}
	return p.flush()
}

// commandView reads the CLI's record of a slash command it ran itself
// (/compact, /model: "<command-name>/compact</command-name>…") or of that
// command's output, which a person did not type as such: "Command" and
// "/compact", or "Command output" and the output.
func commandView(r *Record) (label, text string, ok bool) {
	if r.Type != "user" || len(r.Blocks) != 1 || r.Blocks[0].Type != "text" {
		return "", "", false
	}
	t := strings.TrimSpace(r.Blocks[0].Text)
	switch {
	case strings.HasPrefix(t, "<command-name>"):
		name, _ := tagText(t, "command-name")
		args, _ := tagText(t, "command-args")
		return "Command", strings.TrimSpace(name + " " + args), true
	case strings.HasPrefix(t, "<local-command-stdout>"):
		if out, ok := tagText(t, "local-command-stdout"); ok {
			return "Command output", out, true
		}
	}
	return "", "", false
}

// tagText is the trimmed text between <tag> and </tag> in t.
func tagText(t, tag string) (string, bool) {
	_, rest, ok := strings.Cut(t, "<"+tag+">")
	if !ok {
		return "", false
	}
	in, _, ok := strings.Cut(rest, "</"+tag+">")
	return strings.TrimSpace(in), ok
}

// compactionNote follows a compaction's heading: the summary that comes
// next is the CLI's, not something a person typed.
const compactionNote = "The CLI summarised the conversation so far; the summary below replaces it in the model's context."

// compactionTitle names a compaction with what started it and the
// conversation's size before: "Conversation compacted (manual, 1,100
// tokens before)".
func compactionTitle(c *Compaction) string {
	var parts []string
	if c != nil && isWord(c.Trigger) {
		parts = append(parts, c.Trigger)
	}
	if c != nil && c.PreTokens > 0 {
		parts = append(parts, Thousands(c.PreTokens)+" tokens before")
	}
	if len(parts) == 0 {
		return "Conversation compacted"
	}
	return "Conversation compacted (" + strings.Join(parts, ", ") + ")"
}

// isWord reports whether s is a short lower-case word (a trigger the CLI
// wrote; anything else in a hand-edited file is left out of headings).
func isWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// compactionsLine is the footer's note on compactions, whose API calls
// the usage above cannot count.
func compactionsLine(n int) string {
	return fmt.Sprintf("Not counted: %s (the CLI bills a summary call for each but does not write it to the transcript).", plural(n, "compaction"))
}

func usageLine(u Totals) string {
	s := fmt.Sprintf("%s, %s input, %s output, %s cache read, %s cache write tokens, $%.4f",
		plural(u.APICalls, "API call"), Thousands(u.InputTokens), Thousands(u.OutputTokens),
		Thousands(u.CacheReadInputTokens), Thousands(u.CacheCreationInputTokens), u.CostUSD)
	if len(u.UnpricedModels) > 0 {
		s += fmt.Sprintf(" (%s unpriced: %s)", plural(u.UnpricedCalls, "call"), strings.Join(u.UnpricedModels, ", "))
	}
	return s
}

func statsLine(s ReadStats) string {
	var parts []string
	if s.Malformed > 0 {
		parts = append(parts, plural(s.Malformed, "malformed line"))
	}
	if s.Oversized > 0 {
		parts = append(parts, plural(s.Oversized, "oversized line"))
	}
	if s.Torn > 0 {
		parts = append(parts, plural(s.Torn, "incomplete last line"))
	}
	if s.Repaired > 0 {
		parts = append(parts, plural(s.Repaired, "line")+" of unexpected shape (kept, parts shown as unreadable)")
	}
	return strings.Join(parts, ", ")
}

// Thousands formats n with comma separators.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
