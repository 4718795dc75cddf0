package sandbox

import (
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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

// BenchmarkForwarder compares the forwarder binaries a sandbox can start
// with: pneuma's own (all of pneuma's package initialisation first) and
// the small pneuma-sandbox-forward. Each op opens a box, runs /bin/true
// through bubblewrap and the forwarder, and closes the box; cpu-ms/op is
// the CPU time of bubblewrap and everything it ran (the machine may be
// loaded: compare the two side by side, and CPU before wall time).
func BenchmarkForwarder(b *testing.B) {
	bwrap, err := Check()
	if err != nil {
		b.Skip(err)
	}
	bin := b.TempDir()
	for name, pkg := range map[string]string{"pneuma": "../", ForwarderName: "../cmd/pneuma-sandbox-forward"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, name, name), pkg).CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v: %s", name, err, out)
		}
	}
	work := b.TempDir()
	for _, name := range []string{"pneuma", ForwarderName} {
		self := filepath.Join(bin, name, name)
		b.Run(name, func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Self: self, Dir: work,
					Home: filepath.Join(work, "home"), StateDir: filepath.Join(work, "state")})
				if err != nil {
					b.Fatal(err)
				}
				argv := box.Command(work, []string{"/bin/true"})
				cmd := exec.Command(argv[0], argv[1:]...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if err := box.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
		// The forwarder alone, outside a sandbox: its own start, in CPU
		// time that bubblewrap's accounting does not carry up.
		b.Run(name+"/alone", func(b *testing.B) {
			var cpu time.Duration
			sock := filepath.Join(work, "none.sock")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			_ = ln.Close() // free for the forwarder to bind
			for b.Loop() {
				cmd := exec.Command(self, ForwardCommand, "--socket", sock, "--listen", port, "--", "/bin/true")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
