package history

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strings"
)

// htmlStyle keeps the page self-contained: no scripts, fonts or images from
// the network; it reflows on a phone.
const htmlStyle = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mute:#656d76;--line:#d0d7de;--code:#f6f8fa;--user:#ddf4ff;--err:#ffebe9}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8d96a0;--line:#30363d;--code:#161b22;--user:#0c2d6b;--err:#5d1a1d}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:56rem;padding:1rem;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:var(--bg);color:var(--fg);overflow-wrap:anywhere}
header{border-bottom:1px solid var(--line);margin-bottom:1rem}
h1{font-size:1.3rem;margin:.2rem 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem .8rem;margin:.5rem 0;color:var(--mute);font-size:.9rem}
dd{margin:0}
.msg{border:1px solid var(--line);border-radius:8px;padding:.5rem .8rem;margin:.7rem 0}
.user{background:var(--user)}
.meta{color:var(--mute);font-size:.8rem;margin-bottom:.3rem}
.text{white-space:pre-wrap}
pre{background:var(--code);padding:.5rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;font-size:.85rem;margin:.3rem 0}
details{margin:.3rem 0}
summary{cursor:pointer;color:var(--mute);font-size:.9rem}
.err pre{background:var(--err)}
.tool{font-family:ui-monospace,monospace;font-size:.9rem}
.sub{border-left:3px solid var(--line);padding-left:.7rem;margin:.5rem 0 .5rem .3rem}
.sys{color:var(--mute);font-style:italic;text-align:center;margin:1rem 0}
details.sys{text-align:left}
.title{font-weight:600}
.md pre code{background:none;padding:0}
code{background:var(--code);padding:0 .2rem;border-radius:4px;font-size:.9em}
.md p,.md ul,.md ol{margin:.4rem 0}
.url{color:var(--mute)}
footer{border-top:1px solid var(--line);margin-top:1.5rem;color:var(--mute);font-size:.9rem}
`

type htmlRenderer struct {
	w     *bufio.Writer
	fold  int
	title string
	open  bool   // a message box is open
	outer []bool // open states of the boxes enclosing nested subagents
	err   error
}

func newHTML(w io.Writer, fold int, title string) renderer {
	return &htmlRenderer{w: bufio.NewWriterSize(w, 64<<10), fold: fold, title: title}
}

func (h *htmlRenderer) printf(format string, a ...any) {
	if h.err == nil {
		_, h.err = fmt.Fprintf(h.w, format, a...)
	}
}

var esc = html.EscapeString

func (h *htmlRenderer) begin(hd Header) error {
	title := h.title
	if title == "" {
		title = "Claude Code session " + hd.SessionID
	}
	h.printf("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	h.printf("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	h.printf("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n")
	h.printf("<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<header>\n<h1>%s</h1>\n<dl>\n", esc(title), htmlStyle, esc(title))
	if hd.Project != "" {
		h.printf("<dt>Project</dt><dd><code>%s</code></dd>\n", esc(hd.Project))
	}
	if hd.GitBranch != "" {
		h.printf("<dt>Branch</dt><dd><code>%s</code></dd>\n", esc(hd.GitBranch))
	}
	if hd.Version != "" {
		h.printf("<dt>Claude Code</dt><dd>%s</dd>\n", esc(hd.Version))
	}
	if !hd.Started.IsZero() {
		h.printf("<dt>Started</dt><dd>%s</dd>\n", hd.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	h.printf("</dl>\n</header>\n<main>\n")
	if h.err != nil {
		return h.err
	}
	return h.w.Flush()
}

func (h *htmlRenderer) closeBox() {
	if h.open {
		h.printf("</div>\n")
		h.open = false
	}
}

func (h *htmlRenderer) box(class, meta string) {
	h.closeBox()
	h.printf("<div class=\"msg %s\"><div class=\"meta\">%s</div>\n", class, meta)
	h.open = true
}

func (h *htmlRenderer) record(r *Record, depth int) error {
	if skipInProse(r) {
		return nil
	}
	if r.Unknown {
		h.closeBox()
		h.printf("<details class=\"sys\"><summary>Entry of unknown type %s %s</summary><pre>%s</pre></details>\n", esc(r.Type), clock(r), esc(fold(string(r.Raw), h.fold)))
		return h.err
	}
	switch r.Type {
	case "system":
		h.closeBox()
		if r.Subtype == "compact_boundary" {
			h.printf("<p class=\"sys compact\">%s %s<br>%s</p>\n", esc(compactionTitle(r.Compaction)), clock(r), esc(compactionNote))
			return h.err
		}
		label := "System"
		if r.Subtype != "" {
			label += ": " + r.Subtype
		}
		if t := strings.TrimSpace(r.Blocks[0].Text); t != "" {
			// Hook output, local command output, model fallbacks: folded.
			h.printf("<details class=\"sys\"><summary>%s %s</summary><pre>%s</pre></details>\n", esc(label), clock(r), esc(fold(t, h.fold)))
			return h.err
		}
		h.printf("<p class=\"sys\">%s %s</p>\n", esc(label), clock(r))
		return h.err
	case "summary":
		h.closeBox()
		h.printf("<div class=\"msg title\"><div class=\"meta\">Session title</div>%s</div>\n", esc(strings.TrimSpace(r.Title)))
		return h.err
	case "user":
		if label, text, ok := commandView(r); ok {
			h.box("user", esc(label)+" · "+clock(r))
			h.printf("<div class=\"text\">%s</div>\n", esc(fold(text, h.fold)))
			return h.err
		}
		if !onlyToolResults(r) || !h.open {
			label := "User"
			if r.CompactSummary {
				label = "Summary of earlier conversation"
			}
			if onlyToolResults(r) {
				label = "Tool results"
			}
			h.box("user", esc(label)+" · "+clock(r))
		}
	case "assistant":
		if !r.Continued || !h.open {
			label := "Assistant"
			if r.APIError {
				label = "API error"
			}
			h.box("assistant", esc(strings.Join(nonEmpty(label, r.Model, clock(r)), " · ")))
		}
	}
	for _, b := range r.Blocks {
		if b.Type == "text" && r.Type == "assistant" {
			h.printf("<div class=\"md\">%s</div>\n", markdownHTML(strings.TrimSpace(b.Text)))
			continue
		}
		h.block(b, r.CompactSummary)
	}
	return h.err
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func (h *htmlRenderer) block(b RBlock, compact bool) {
	switch b.Type {
	case "text":
		if compact {
			h.printf("<details><summary>Summary</summary><div class=\"text\">%s</div></details>\n", esc((fold(b.Text, h.fold))))
			return
		}
		h.printf("<div class=\"text\">%s</div>\n", esc(strings.TrimSpace((b.Text))))
	case "thinking":
		if strings.TrimSpace(b.Text) != "" {
			h.printf("<details><summary>Thinking</summary><div class=\"text\">%s</div></details>\n", esc((fold(b.Text, h.fold))))
		}
	case "tool_use", "server_tool_use":
		v := viewToolUse(b.Name, b.Input, h.fold)
		h.printf("<div class=\"tool\">▶ <b>%s</b> %s</div>\n", esc(b.Name), esc(v.title))
		if v.body != "" {
			h.printf("<details><summary>Input</summary><pre>%s</pre></details>\n", esc(v.body))
		}
	case "tool_result":
		label := "Result"
		if b.ToolName != "" {
			label = b.ToolName + " result"
		}
		class := ""
		if b.IsError {
			label += " (error)"
			class = " class=\"err\""
		}
		lines := strings.Count(b.Text, "\n") + 1
		h.printf("<details%s><summary>%s · %s</summary><pre>%s</pre></details>\n", class, esc(label), plural(lines, "line"), esc((fold(b.Text, h.fold))))
	case Unreadable:
		h.printf("<details class=\"err\"><summary>Unreadable part (unexpected shape)</summary><pre>%s</pre></details>\n", esc(fold(b.Text, h.fold)))
	default:
		h.printf("<div class=\"meta\">[%s]</div>\n", esc(b.Type))
	}
}

func (h *htmlRenderer) beginSub(r *Record, depth int) error {
	label := "Subagent"
	if r.AgentType != "" {
		label += " " + r.AgentType
	}
	if r.Description != "" {
		label += ": " + (r.Description)
	}
	// The subagent nests inside the box of the call that started it.
	h.printf("<details class=\"sub\"><summary>%s</summary>\n", esc(label))
	h.outer = append(h.outer, h.open)
	h.open = false
	return h.err
}

func (h *htmlRenderer) endSub(r *Record, depth int) error {
	h.closeBox()
	h.printf("</details>\n")
	// Back in the box that started the subagent.
	h.open = h.outer[len(h.outer)-1]
	h.outer = h.outer[:len(h.outer)-1]
	return h.err
}

func (h *htmlRenderer) end(f Footer) error {
	h.closeBox()
	h.printf("</main>\n<footer>\n<p>Usage (estimated from the transcript, deduplicated): %s</p>\n", esc(usageLine(f.Usage)))
	if f.Compactions > 0 {
		h.printf("<p>%s</p>\n", esc(compactionsLine(f.Compactions)))
	}
	if s := statsLine(f.Stats); s != "" {
		h.printf("<p>Skipped while reading: %s</p>\n", esc(s))
	}
	h.printf("</footer>\n</body>\n</html>\n")
	if h.err != nil {
		return h.err
	}
	return h.w.Flush()
}
