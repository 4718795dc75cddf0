package text

import (
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short stays", "hello", 10, "hello"},
		{"exactly n", "hello", 5, "hello"},
		{"cut with an ellipsis", "hello world", 8, "hello w…"},
		{"whitespace folded", "  fix\tthe\n\n bug  ", 40, "fix the bug"},
		{"folded before counting", "a\n\n\n\nb", 3, "a b"},
		{"no space before the ellipsis", "hello world", 7, "hello…"},
		{"runes, not bytes", "héllo wörld", 6, "héllo…"},
		{"multibyte at the cut", "日本語のテキスト", 4, "日本語…"},
		{"n of one", "hello", 1, "…"},
		{"n of zero keeps all", "a  b", 0, "a b"},
		{"empty", "", 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Shorten(tt.s, tt.n)
			if got != tt.want {
				t.Errorf("Shorten(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
			}
			if tt.n > 0 && utf8.RuneCountInString(got) > tt.n {
				t.Errorf("Shorten(%q, %d) = %q: longer than %d runes", tt.s, tt.n, got, tt.n)
			}
		})
	}
}

func TestTruncateKeepsLines(t *testing.T) {
	if got := Truncate("a\nb\nc", 5); got != "a\nb\nc" {
		t.Errorf("Truncate() = %q, want the text as it is", got)
	}
	if got := Truncate("a\nbcdef", 4); got != "a\nb…" {
		t.Errorf("Truncate() = %q, want a\\nb…", got)
	}
}
