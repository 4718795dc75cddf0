package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write := func(dir, name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write(root, "ok.txt", "hello")
	secret := write(outside, "secret.txt", "s3cret")
	big := write(root, "big.txt", strings.Repeat("x", 101))
	fifo := filepath.Join(root, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	roots := []string{root}
	for _, tc := range []struct {
		path  string
		roots []string
		check func(error) bool
	}{
		{ok, roots, func(err error) bool { return err == nil }},
		{"/dev/zero", nil, func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{"/dev/zero", roots, func(err error) bool { var oe *OutsideError; return errors.As(err, &oe) }},
		{fifo, roots, func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{root, roots, func(err error) bool { return errors.Is(err, ErrNotRegular) }},
		{big, roots, func(err error) bool { var te *TooLargeError; return errors.As(err, &te) }},
		{secret, roots, func(err error) bool { var oe *OutsideError; return errors.As(err, &oe) }},
		{filepath.Join(root, "..", filepath.Base(outside), "secret.txt"), roots, func(err error) bool { var oe *OutsideError; return errors.As(err, &oe) }},
		{link, roots, func(err error) bool {
			var oe *OutsideError
			return errors.As(err, &oe) && !strings.Contains(err.Error(), outside)
		}},
	} {
		done := make(chan error, 1)
		go func() { _, err := Read(tc.path, tc.roots, 100); done <- err }()
		select {
		case err := <-done:
			if !tc.check(err) {
				t.Errorf("Read(%s, %v): %v", tc.path, tc.roots, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", tc.path)
		}
	}
}

func TestCheckRoots(t *testing.T) {
	root := t.TempDir()
	if _, err := CheckRoots(filepath.Join(root, "missing", "deeper"), []string{root}); err != nil {
		t.Errorf("a missing path under the root: %v", err)
	}
	for _, p := range []string{"/", "/nonexistent", "relative", filepath.Join(root, "..")} {
		var oe *OutsideError
		if _, err := CheckRoots(p, []string{root}); !errors.As(err, &oe) {
			t.Errorf("CheckRoots(%s): %v", p, err)
		}
	}
}

// FuzzCheckRoots: whatever path a client names, an accepted one resolves
// under the root, and a refusal never names anything but the given path.
func FuzzCheckRoots(f *testing.F) {
	root, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	outside := f.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "in"), 0o755); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"in", "out", "out/x", "../x", "in/../../x", "in/./x", "", "/", "//", "in/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		p := filepath.Join(root, rel)
		if strings.HasPrefix(rel, "/") {
			p = rel
		}
		real, err := CheckRoots(p, []string{root})
		if err == nil && !inside(real, root) {
			t.Fatalf("CheckRoots(%q) accepted %q, outside %s", p, real, root)
		}
		if err != nil && strings.Contains(err.Error(), outside) && !strings.Contains(p, outside) {
			t.Fatalf("CheckRoots(%q): %v tells the symlink's target", p, err)
		}
	})
}

// What Read opens is what it checked: a file (or a directory on its path)
// swapped for a symlink out of the root between the check and the open is
// not followed; a link that stays inside the root still reads.
func TestReadDoesNotFollowASwappedLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(outside, "f.txt"), filepath.Join(outside, "sub", "f.txt")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("s3cret"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(root, "f.txt"), filepath.Join(root, "sub", "f.txt")} {
		if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("f.txt", filepath.Join(root, "alias.txt")); err != nil {
		t.Fatal(err)
	}
	defer func() { checked = func() {} }()
	if data, err := Read(filepath.Join(root, "alias.txt"), []string{root}, 100); err != nil || string(data) != "hello" {
		t.Errorf("a link inside the root: %q, %v", data, err)
	}
	for _, tc := range []struct{ path, swap, target string }{
		{filepath.Join(root, "f.txt"), filepath.Join(root, "f.txt"), filepath.Join(outside, "f.txt")},
		{filepath.Join(root, "sub", "f.txt"), filepath.Join(root, "sub"), filepath.Join(outside, "sub")},
	} {
		checked = func() {
			if err := os.RemoveAll(tc.swap); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.target, tc.swap); err != nil {
				t.Fatal(err)
			}
		}
		data, err := Read(tc.path, []string{root}, 100)
		if err == nil || strings.Contains(string(data), "s3cret") {
			t.Errorf("%s swapped for a link out of the root after the check: read %q, %v", tc.swap, data, err)
		}
		if err != nil && strings.Contains(err.Error(), outside) {
			t.Errorf("the error names the link's target: %v", err)
		}
	}
}
