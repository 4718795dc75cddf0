// Package text shortens text for one-line display: progress lines, listings
// and messages that quote what a user or a tool wrote.
package text

import (
	"strings"
	"unicode/utf8"
)

// Fold puts s on one line: every run of whitespace (newlines included)
// becomes one space, and leading and trailing whitespace goes.
func Fold(s string) string { return strings.Join(strings.Fields(s), " ") }

// Shorten is s folded onto one line (Fold) and cut to at most n runes
// (Truncate).
func Shorten(s string, n int) string { return Truncate(Fold(s), n) }

// Truncate cuts s to at most n runes, the last of them "…" when anything was
// cut, never inside a UTF-8 sequence and without spaces before the "…". n <= 0
// leaves s whole.
func Truncate(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := 0
	for i := range s {
		if runes == n-1 {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		runes++
	}
	return s
}
