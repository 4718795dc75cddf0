package sandbox

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStart measures what a sandbox adds to a job's start: opening the
// box (config copy, proxy) and running a command through bubblewrap and the
// forwarder, against running the same command directly.
func BenchmarkStart(b *testing.B) {
	bwrap, err := Check()
	if err != nil {
		b.Skip(err)
	}
	work := b.TempDir()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		for b.Loop() {
			box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: work, Home: filepath.Join(work, "home"),
				StateDir: filepath.Join(work, "state")})
			if err != nil {
				b.Fatal(err)
			}
			argv := box.Command(work, []string{"/bin/true"})
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			if err := box.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStartParts splits the sandboxed start: opening the box, and
// running through bubblewrap and the forwarder.
func BenchmarkStartParts(b *testing.B) {
	bwrap, err := Check()
	if err != nil {
		b.Skip(err)
	}
	work := b.TempDir()
	cfg := Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: work, Home: filepath.Join(work, "home"), StateDir: filepath.Join(work, "state")}
	b.Run("open-close", func(b *testing.B) {
		for b.Loop() {
			box, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			_ = box.Close()
		}
	})
	box, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	b.Run("bwrap-only", func(b *testing.B) {
		argv := append([]string{bwrap}, box.bwrapArgs(work)...)
		argv = append(argv, "--", "/bin/true")
		for b.Loop() {
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
	b.Run("bwrap-forwarder", func(b *testing.B) {
		argv := box.Command(work, []string{"/bin/true"})
		for b.Loop() {
			if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
	})
}
