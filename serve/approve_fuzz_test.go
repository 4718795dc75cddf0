package serve

import (
	"strings"
	"testing"
	"time"
)

// FuzzLinkToken: an approval token from a URL never panics the parser,
// and only the server's own, unexpired tokens parse.
func FuzzLinkToken(f *testing.F) {
	l := &links{key: []byte("fuzz-key-0123456789abcdef0123456"), ttl: time.Minute, public: "https://p", now: time.Now, used: map[string]time.Time{}}
	good, _ := l.mint("s1", "r1")
	tok := strings.TrimPrefix(good, "https://p/approve/")
	for _, s := range []string{tok, "", ".", "a.b", tok + "x", strings.Repeat("A", 5000) + "." + "B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := l.parse(s)
		if err == nil && s != tok {
			if c.session != "s1" || c.request != "r1" {
				t.Fatalf("a forged token parsed: %q → %+v", s, c)
			}
		}
	})
}
