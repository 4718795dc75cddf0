package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// binaryMagic are the first bytes of the executable formats a build writes:
// ELF, Mach-O (32 and 64 bit, both byte orders, and universal) and PE.
var binaryMagic = [][]byte{
	[]byte("\x7fELF"),
	{0xfe, 0xed, 0xfa, 0xce}, {0xce, 0xfa, 0xed, 0xfe},
	{0xfe, 0xed, 0xfa, 0xcf}, {0xcf, 0xfa, 0xed, 0xfe},
	{0xca, 0xfe, 0xba, 0xbe},
	[]byte("MZ"),
}

// isBinary reports whether head starts like an executable.
func isBinary(head []byte) bool {
	for _, m := range binaryMagic {
		if bytes.HasPrefix(head, m) {
			return true
		}
	}
	return false
}

// TestNoTrackedBinaries fails when git tracks a build output: an ELF, Mach-O
// or PE file. Build outputs belong in .gitignore.
func TestNoTrackedBinaries(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		f, err := os.Open(name)
		if err != nil {
			continue // deleted in the work tree, or a submodule
		}
		head := make([]byte, 4)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if isBinary(head[:n]) {
			t.Errorf("%s is a tracked binary: remove it (git rm --cached) and ignore it", name)
		}
	}
}

func TestIsBinary(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{"\x7fELF", true}, {"MZ\x90\x00", true}, {"\xcf\xfa\xed\xfe", true}, {"\xca\xfe\xba\xbe", true},
		{"pack", false}, {"#!/b", false}, {"", false}, {"M", false},
	} {
		if got := isBinary([]byte(c.head)); got != c.want {
			t.Errorf("isBinary(%q) = %v, want %v", c.head, got, c.want)
		}
	}
}
