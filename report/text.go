package report

import (
	"strings"
	"unicode/utf8"
)

// CleanText removes what must not reach an XML file or a CI log viewer from
// model or CLI output: ANSI escape sequences (CSI, OSC, and two-byte ESC
// sequences), C0 and C1 control characters other than tab, newline and
// carriage return, the non-characters U+FFFE and U+FFFF, and invalid UTF-8
// (surrogates included), which becomes U+FFFD.
func CleanText(s string) string {
	if isClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b:
			i += escapeLen(s[i:])
			continue
		case r == 0x9b: // C1 CSI, the one-character form of ESC [
			i += size + csiLen(s[i+size:])
			continue
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case allowedRune(r):
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func isClean(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == 0x1b || !allowedRune(r) {
			return false
		}
		i += size
	}
	return true
}

// allowedRune reports whether r may appear in XML 1.0 text and is not a
// control character.
func allowedRune(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return false
	case r >= 0xd800 && r <= 0xdfff:
		return false
	case r == 0xfffe || r == 0xffff:
		return false
	}
	return r <= utf8.MaxRune
}

// escapeLen returns the length of the escape sequence at the start of s,
// which begins with ESC.
func escapeLen(s string) int {
	if len(s) < 2 {
		return len(s)
	}
	switch s[1] {
	case '[':
		return 2 + csiLen(s[2:])
	case ']', 'P', 'X', '^', '_':
		// OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (ESC \).
		for i := 2; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return len(s)
	}
	// ESC, any intermediate bytes (0x20-0x2f), then one final byte.
	i := 1
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// csiLen returns the length of a CSI sequence's body: parameter bytes
// (0x30-0x3f), intermediate bytes (0x20-0x2f) and one final byte (0x40-0x7e).
func csiLen(s string) int {
	i := 0
	for i < len(s) && s[i] >= 0x30 && s[i] <= 0x3f {
		i++
	}
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// truncate cuts s to at most max bytes on a rune boundary and says so.
func truncate(s string, max int, note string) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(note)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}
