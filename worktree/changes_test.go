package worktree

import (
	"reflect"
	"testing"
)

func TestParseChanges(t *testing.T) {
	out := []byte("?? new.txt\x00 M changed.go\x00 D gone.md\x00A  staged.txt\x00R  renamed.txt\x00old.txt\x00D  removed.txt\x00")
	want := []Change{
		{"new.txt", Created}, {"changed.go", Modified}, {"gone.md", Deleted},
		{"staged.txt", Created}, {"renamed.txt", Created}, {"removed.txt", Deleted},
	}
	if got := parseChanges(out); !reflect.DeepEqual(got, want) {
		t.Fatalf("parseChanges = %+v\nwant %+v", got, want)
	}
	if got := parseChanges(nil); len(got) != 0 {
		t.Fatalf("clean tree: %+v", got)
	}
}
