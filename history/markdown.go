package history

import (
	"regexp"
	"strings"
)

// markdownHTML renders the Markdown a model writes as HTML, safely: the text
// is escaped first, and only a small subset is then turned into markup
// (fenced code blocks, inline code, bullet and numbered lists, emphasis,
// headings as bold lines, links shown as their text and address). Nothing
// in the text can open a tag, an attribute or a link.
func markdownHTML(s string) string {
	var m mdWriter
	for _, line := range strings.Split(s, "\n") {
		m.line(line)
	}
	m.finish()
	return m.b.String()
}

type mdWriter struct {
	b      strings.Builder
	inCode bool
	list   string   // "ul" or "ol" while a list is open
	para   []string // escaped, inline-rendered lines of the open paragraph
}

var (
	bulletRe  = regexp.MustCompile(`^\s*[-*+]\s+(.*)$`)
	numberRe  = regexp.MustCompile(`^\s*\d{1,9}[.)]\s+(.*)$`)
	headingRe = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	strongRe  = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	emRe      = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*)\*`)
	linkRe    = regexp.MustCompile(`\[([^\]\n]+)\]\(([^)\s]+)\)`)
)

func (m *mdWriter) line(line string) {
	trimmed := strings.TrimSpace(line)
	if m.inCode {
		if strings.HasPrefix(trimmed, "```") {
			m.b.WriteString("</code></pre>\n")
			m.inCode = false
			return
		}
		m.b.WriteString(esc(line) + "\n")
		return
	}
	switch {
	case strings.HasPrefix(trimmed, "```"):
		m.endBlock()
		m.b.WriteString("<pre><code>")
		m.inCode = true
	case trimmed == "":
		m.endBlock()
	case bulletRe.MatchString(line):
		m.item("ul", bulletRe.FindStringSubmatch(line)[1])
	case numberRe.MatchString(line):
		m.item("ol", numberRe.FindStringSubmatch(line)[1])
	case headingRe.MatchString(trimmed):
		m.endBlock()
		m.b.WriteString("<p><strong>" + inlineMD(headingRe.FindStringSubmatch(trimmed)[1]) + "</strong></p>\n")
	default:
		m.closeList()
		m.para = append(m.para, inlineMD(line))
	}
}

func (m *mdWriter) item(kind, text string) {
	m.flushPara()
	if m.list != kind {
		m.closeList()
		m.b.WriteString("<" + kind + ">\n")
		m.list = kind
	}
	m.b.WriteString("<li>" + inlineMD(text) + "</li>\n")
}

func (m *mdWriter) flushPara() {
	if len(m.para) > 0 {
		m.b.WriteString("<p>" + strings.Join(m.para, "<br>\n") + "</p>\n")
		m.para = m.para[:0]
	}
}

func (m *mdWriter) closeList() {
	if m.list != "" {
		m.b.WriteString("</" + m.list + ">\n")
		m.list = ""
	}
}

func (m *mdWriter) endBlock() {
	m.flushPara()
	m.closeList()
}

func (m *mdWriter) finish() {
	if m.inCode {
		m.b.WriteString("</code></pre>\n")
	}
	m.endBlock()
}

// inlineMD escapes one line and renders code spans, emphasis and links.
// Code spans are cut out first, so nothing inside them is touched.
func inlineMD(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + esc(p) + "</code>")
		case i%2 == 1: // an unmatched backtick
			b.WriteString("`" + inlineText(p))
		default:
			b.WriteString(inlineText(p))
		}
	}
	return b.String()
}

func inlineText(s string) string {
	s = esc(s)
	s = linkRe.ReplaceAllString(s, `$1 <span class="url">($2)</span>`)
	s = strongRe.ReplaceAllString(s, "<strong>$1$2</strong>")
	return emRe.ReplaceAllString(s, "$1<em>$2</em>")
}
