package sandbox

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestAlternatesAsGitResolvesThem: the stores an object store reaches
// through its alternates, as git resolves them: absolute paths as they
// are, relative ones from the store naming them (outside and inside),
// quoted ones unquoted, recursively and each once; comments, directories
// that are no object store, one that holds the repository and paths that
// climb above the root left out.
func TestAlternatesAsGitResolvesThem(t *testing.T) {
	root := t.TempDir()
	store := func(rel, alternates string) string {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Join(dir, "pack"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, "info"), 0o755); err != nil {
			t.Fatal(err)
		}
		if alternates != "" {
			if err := os.WriteFile(filepath.Join(dir, "info", "alternates"), []byte(alternates), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	deep := store("ref/deep/objects", "")
	abs := store("abs store/objects", `"`+filepath.Join(root, "ref", "deep", "objects")+`"`+"\n")
	rel := store("ref/objects", "# a comment\n\n../../shared/objects\n") // back to shared: a cycle
	if err := os.MkdirAll(filepath.Join(root, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "pack"), 0o755); err != nil { // root holds the repository
		t.Fatal(err)
	}
	shared := store("shared/objects", "../../ref/objects\n"+abs+"\n"+filepath.Join(root, "plain")+"\n"+root+"\n"+
		"../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../x/objects\n")
	inside := insideStore(shared)
	got := alternates(shared, inside, filepath.Dir(shared), 0, map[string]bool{shared: true})
	want := []altStore{
		{host: rel, inside: filepath.Join(inside, "../../ref/objects")},
		{host: abs, inside: abs},
		{host: deep, inside: deep},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("alternates:\n%+v\nwant\n%+v", got, want)
	}
	for _, c := range []struct {
		dir, rel string
		above    bool
	}{{"/a/b", "../../x", false}, {"/a/b", "../../../x", true}, {"/", "..", true}, {"/a", "./b/../..", false}, {"/a", "b/../../..", true}} {
		if got := climbsAboveRoot(c.dir, c.rel); got != c.above {
			t.Errorf("climbsAboveRoot(%q, %q) = %v", c.dir, c.rel, got)
		}
	}
}
