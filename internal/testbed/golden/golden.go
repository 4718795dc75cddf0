// Package golden compares test output with files under testdata and, with
// go test -update, rewrites them. Review every rewrite in the diff: a golden
// file is what the test asserts.
//
// A test package that imports golden gets the -update flag from it and must
// not define its own.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata (review the diff)")

// Check compares got with testdata/name (name may hold slashes) and fails
// the test with the first difference, or with -update writes got there.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	CheckFile(t, filepath.Join("testdata", name), got)
}

// CheckFile is Check for a file anywhere.
func CheckFile(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("update golden file: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("update golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it; review the diff): %s", path, firstDiff(got, want))
	}
}

// firstDiff describes where got and want part: the first differing line of
// each, quoted so that invisible characters show.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d\n got: %q\nwant: %q\n(%d lines, want %d)", i+1, gl, wl, len(g), len(w))
		}
	}
	return "same lines, different bytes"
}
