package history

import (
	"strings"
	"unicode/utf8"
)

// stripControls removes terminal control sequences from s: ANSI escape
// sequences (CSI "ESC [ … final", OSC "ESC ] … BEL or ESC \", other
// two-byte escapes), the C1 controls (U+0080-U+009F, among them the 8-bit
// CSI) and every other C0 control but tab and newline (a lone CR rewrites a
// terminal line, backspace overstrikes). Tool output often carries colours;
// an export must not carry them to a terminal, a Markdown viewer or a page.
func stripControls(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f {
			break
		}
		i++
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
			i++ // CRLF: keep the newline
		case c < 0x20 && c != '\t' && c != '\n', c == 0x7f:
			i++
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r >= 0x80 && r <= 0x9f {
				if r == 0x9b { // 8-bit CSI: skip its parameters too
					i = skipCSI(s, i+n)
				} else {
					i += n
				}
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipEscape returns the index after the escape sequence at s[i] == ESC.
func skipEscape(s string, i int) int {
	i++
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', '_', '^', 'X': // OSC, DCS, APC, PM, SOS: to BEL or ST
		for j := i + 1; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	}
	// Two-byte escapes (ESC c, ESC 7…), with intermediate bytes.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) {
		i++
	}
	return i
}

// skipCSI returns the index after a CSI sequence's parameters and final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}
