package worktree

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("abcdefghij", 10)
	tests := []struct{ in, want string }{
		{"lint", "lint"},
		{"Fix-Bug_2.go", "Fix-Bug_2.go"},
		{"a/b", "a-b"},
		{"a b", "a-b"},
		{"a//b  c", "a-b-c"},
		{"../x", "x"},
		{"x/../../y", "x-.-.-y"},
		{"a..b", "a.b"},
		{"..", "job"},
		{".hidden", "hidden"},
		{"name.lock", "name"},
		{"name.LOCK", "name"},
		{"a.lock.lock", "a"},
		{".lock", "lock"},
		{"x.lock-", "x"},
		{"", "job"},
		{"---", "job"},
		{"HEAD", "HEAD-job"},
		{"@", "job"},
		{"a@{b}", "a-b"},
		{"refs/heads/main", "refs-heads-main"},
		{"über café", "ber-caf"},
		{"日本語", "job"},
		{"emoji 🚀 job", "emoji-job"},
		{"tab\there\nnewline", "tab-here-newline"},
		{"back\\slash:colon?*[x]^~", "back-slash-colon-x"},
		{"-leading-and-trailing-", "leading-and-trailing"},
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{long, long[:55] + "-" + "fcbb61d0"},
		{long + "!", long[:55] + "-" + "aada8cdf"},
		{strings.Repeat("a", 54) + "......." + strings.Repeat("b", 20), strings.Repeat("a", 54) + "-" + "eb02996b"},
	}
	for _, tt := range tests {
		got := SanitizeName(tt.in)
		if got != tt.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if err := ValidBranch("pneuma/run/" + got); err != nil {
			t.Errorf("SanitizeName(%q) = %q: %v", tt.in, got, err)
		}
	}
	// Deterministic, and long names that share a prefix stay apart.
	if SanitizeName(long+"1") == SanitizeName(long+"2") {
		t.Error("long names with a common prefix collide")
	}
	first := SanitizeName(long + "/x")
	if again := SanitizeName(long + "/x"); again != first {
		t.Errorf("not deterministic: %q, then %q", first, again)
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"", "lint", "../x", "a/b", "x.lock", "HEAD", "@{", "日本語", strings.Repeat("a.", 40), "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := SanitizeName(name)
		if err := ValidBranch(got); err != nil {
			t.Fatalf("SanitizeName(%q) = %q: %v", name, got, err)
		}
		if err := ValidBranch("pneuma/run/" + got); err != nil {
			t.Fatalf("SanitizeName(%q) = %q: %v", name, got, err)
		}
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, "/\\\x00") {
			t.Fatalf("SanitizeName(%q) = %q: not a single path component", name, got)
		}
		if len(got) > maxName || !utf8.ValidString(got) {
			t.Fatalf("SanitizeName(%q) = %q: too long or not UTF-8", name, got)
		}
		if again := SanitizeName(got); again != got {
			t.Fatalf("SanitizeName not idempotent: %q -> %q -> %q", name, got, again)
		}
	})
}

func TestValidBranch(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"main", true},
		{"pneuma/run-1/lint", true},
		{"feature/x.y", true},
		{"ünïcode", true},
		{"a@b", true},
		{"a-", true},
		{"x.lockx", true},
		{"", false},
		{"-x", false},
		{"HEAD", false},
		{"@", false},
		{"a..b", false},
		{"a/.b", false},
		{".a", false},
		{"a.lock", false},
		{"a/b.lock/c", false},
		{"a/", false},
		{"/a", false},
		{"a//b", false},
		{"a.", false},
		{"a b", false},
		{"a~b", false},
		{"a^b", false},
		{"a:b", false},
		{"a?b", false},
		{"a*b", false},
		{"a[b", false},
		{"a\\b", false},
		{"a\x7fb", false},
		{"a\tb", false},
		{"a@{b", false},
	}
	for _, tt := range tests {
		err := ValidBranch(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidBranch(%q) = %v, want ok %v", tt.name, err, tt.ok)
		}
		// The reference is git itself.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		gitOK := exec.CommandContext(ctx, git, "check-ref-format", "--branch", tt.name).Run() == nil
		cancel()
		if gitOK != tt.ok && tt.name != "HEAD" && tt.name != "@" && tt.name != "" {
			t.Errorf("git check-ref-format --branch %q ok = %v, table says %v", tt.name, gitOK, tt.ok)
		}
	}
}

// FuzzParsers feeds arbitrary bytes to the parsers of git output and of
// user-given revisions: they must not panic.
func FuzzParsers(f *testing.F) {
	f.Add("M  a\x00R  new\x00old\x00?? x y\x00")
	f.Add("1\t2\ta\x00-\t-\tbin\x000\t0\t\x00old\x00new\x00")
	f.Add("worktree /r\nHEAD 1\nbranch refs/heads/main\n\nworktree /w\nbare\n")
	f.Add("HEAD~2^2~")
	f.Fuzz(func(t *testing.T, s string) {
		parseStatus([]byte(s))
		_, _ = parseNumstat([]byte(s))
		parseList([]byte(s))
		name, steps, ok := splitRevision(s)
		if ok && len(name) > len(s) {
			t.Fatalf("splitRevision(%q) = %q, %v", s, name, steps)
		}
	})
}
