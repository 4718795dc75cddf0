package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteDiffAgainstTheFile: a Write over a file in the session's
// worktree shows what changes, with context, not the whole new content; a
// new file is all added; a file outside the worktree (through a symlink in
// it) is never read.
func TestWriteDiffAgainstTheFile(t *testing.T) {
	wt := t.TempDir()
	var old []string
	for i := 1; i <= 20; i++ {
		old = append(old, "line "+string(rune('a'+i)))
	}
	file := filepath.Join(wt, "notes.txt")
	if err := os.WriteFile(file, []byte(strings.Join(old, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := append([]string(nil), old...)
	changed[9] = "LINE TEN"
	got := render(writeDiff(file, strings.Join(changed, "\n")+"\n", wt))
	want := "hunk @@ line 7 @@\nctx line h\nctx line i\nctx line j\ndel line k\nadd LINE TEN\nctx line l\nctx line m\nctx line n\n"
	if got != want {
		t.Errorf("overwrite:\n%s\nwant:\n%s", got, want)
	}

	if got := render(writeDiff(filepath.Join(wt, "new.txt"), "a\nb", wt)); got != "add a\nadd b\n" {
		t.Errorf("new file:\n%s", got)
	}

	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(wt, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"symlink out": link, "outside": secret} {
		got := render(writeDiff(path, "x", wt))
		if strings.Contains(got, "the secret") || !strings.HasPrefix(got, "note ") || !strings.HasSuffix(got, "add x\n") {
			t.Errorf("%s:\n%s", name, got)
		}
	}
	if got := render(writeDiff(file, strings.Join(old, "\n")+"\n", wt)); !strings.HasPrefix(got, "note (no change") {
		t.Errorf("same content:\n%s", got)
	}
}

func render(lines []diffLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.Op + " " + l.Text + "\n")
	}
	return b.String()
}
