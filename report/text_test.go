package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text ✓ 🚀", "plain text ✓ 🚀"},
		{"tab\tnl\ncr\r", "tab\tnl\ncr\r"},
		{"\x1b[1;31mred\x1b[0m", "red"},
		{"\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
		{"\x1b]0;title\x07after", "after"},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b(Bcharset", "charset"},
		{"\x1b7saved\x1b8", "saved"},
		{"\u009b31mc1 csi", "c1 csi"},
		{"nul\x00bel\x07bs\x08del\x7f", "nulbelbsdel"},
		{"c1\u0085\u0080", "c1"},
		{"non\ufffe\uffffchars", "nonchars"},
		{"bad\xffutf8", "bad\ufffdutf8"},
		{"surrogate\xed\xa0\x80", "surrogate\ufffd\ufffd\ufffd"},
		{"unterminated \x1b[31", "unterminated "},
		{"lone esc\x1b", "lone esc"},
		{"]]> cdata end", "]]> cdata end"},
	}
	for _, tt := range tests {
		if got := CleanText(tt.in); got != tt.want {
			t.Errorf("CleanText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzCleanText checks that whatever the model writes, the cleaned text is
// valid UTF-8 that XML can carry unchanged, and cleaning is idempotent.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{nasty, "\x1b[", "\x1b]", "\x1b\x1b[31m", "\u009b", "\xed\xbf\xbf", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := CleanText(s)
		if !utf8.ValidString(c) {
			t.Fatalf("CleanText(%q) = %q is not valid UTF-8", s, c)
		}
		if strings.ContainsRune(c, 0x1b) {
			t.Fatalf("CleanText(%q) = %q keeps an ESC", s, c)
		}
		if CleanText(c) != c {
			t.Fatalf("CleanText is not idempotent on %q", s)
		}
		var buf bytes.Buffer
		if err := xml.EscapeText(&buf, []byte(c)); err != nil {
			t.Fatal(err)
		}
		var back struct {
			Text string `xml:",chardata"`
		}
		if err := xml.Unmarshal([]byte("<a>"+buf.String()+"</a>"), &back); err != nil {
			t.Fatalf("cleaned text %q does not survive XML: %v", c, err)
		}
		if want := strings.ReplaceAll(c, "\r\n", "\n"); back.Text != strings.ReplaceAll(want, "\r", "\n") && back.Text != c {
			t.Fatalf("XML changed %q into %q", c, back.Text)
		}
	})
}
