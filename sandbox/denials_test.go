package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Tool results show the sandbox's refusals: EROFS for a write, a missing
// path that exists outside for a read; a path missing everywhere is no
// denial.
func TestNoteToolResult(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(key, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Box{}
	b.NoteToolResult("", "cat: "+key+": No such file or directory\n"+
		"/bin/bash: line 1: /repo/x.txt: Read-only file system\n"+
		"touch: cannot touch '/repo/x.txt': Read-only file system\n"+
		"cat: /nowhere/at/all: No such file or directory\nok")
	b.NoteToolResult(key, "File does not exist. Note: your current working directory is /w.")
	b.NoteToolResult("/etc/passwd", "EROFS: read-only file system, open '/etc/passwd'")
	b.NoteToolResult("", "all fine")
	got := b.denied.list()
	want := []Denied{{"read", key, 2}, {"write", "/repo/x.txt", 2}, {"write", "/etc/passwd", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("denied = %+v\nwant %+v", got, want)
	}
}

// Tool results are the agent's output: whatever they hold, a denial names
// an absolute, bounded path, counts at least once, and no line is
// counted twice.
func FuzzNoteToolResult(f *testing.F) {
	for _, s := range []string{"/bin/bash: line 1: /x: Read-only file system", "EROFS: read-only file system, open '/y'",
		"cat: /etc/passwd: No such file or directory", "does not exist /", "\n\n"} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, text, path string) {
		b := &Box{}
		b.NoteToolResult(path, text)
		total := 0
		for _, d := range b.denied.list() {
			if d.Path != "(other)" && (!filepath.IsAbs(d.Path) || len(d.Path) > 300) || d.Count < 1 || (d.Op != "read" && d.Op != "write") {
				t.Errorf("denial %+v", d)
			}
			total += d.Count
		}
		if lines := strings.Count(text, "\n") + 1; total > lines {
			t.Errorf("%d denials from %d lines", total, lines)
		}
	})
}
