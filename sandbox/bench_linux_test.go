package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// BenchmarkObjectSync measures a job's sync (see Box.SyncRefs): with
// nothing new, and with one new commit made inside (a blob, a tree and a
// commit in the private store, the branch's ref moved inside), which moves
// its objects into the shared store through git and carries the ref out.
// cpu-ms/op is the CPU time of the git processes it ran (getrusage of the
// children), ns/op its wall time; making the commit is not timed.
func BenchmarkObjectSync(b *testing.B) {
	bwrap, err := Check()
	if err != nil {
		b.Skip(err)
	}
	root := b.TempDir()
	repo := filepath.Join(root, "repo")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	git := func(dir string, extra []string, stdin string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, append(env, extra...), strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		b.Fatal(err)
	}
	git(repo, nil, "", "init", "-q", "-b", "main")
	git(repo, nil, "", "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(repo, ".pneuma", "worktrees", "r1", "mine")
	git(repo, nil, "", "worktree", "add", "-q", "-b", "pneuma/r1/mine", wt)
	state := filepath.Join(root, "state")
	box, err := Open(Config{Spec: Spec{Enabled: true}, Bwrap: bwrap, Dir: wt, Repo: repo, Home: root, StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	defer box.Close()
	box.Prefix(wt) // the private store and ref, as a launch makes them
	priv := []string{"GIT_OBJECT_DIRECTORY=" + filepath.Join(state, "git", "objects", objPriv),
		"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(repo, ".git", "objects")}
	ref := filepath.Join(state, "git", "refs", "mine")
	children := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(b *testing.B, commit bool) {
		var cpu time.Duration
		n := 0
		for b.Loop() {
			if commit {
				b.StopTimer()
				n++
				blob := git(wt, priv, fmt.Sprintf("change %d\n", n), "hash-object", "-w", "--stdin")
				tree := git(wt, priv, "100644 blob "+blob+"\tf\n", "mktree")
				head := git(wt, nil, "", "rev-parse", "HEAD")
				c := git(wt, priv, "", "commit-tree", tree, "-p", head, "-m", "inside")
				if err := replaceFile(ref, c+"\n"); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			before := children()
			box.SyncRefs()
			cpu += children() - before
		}
		if errs := box.Report().RefErrors; len(errs) != 0 {
			b.Fatalf("sync errors: %v", errs)
		}
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("nothing-new", func(b *testing.B) { run(b, false) })
	b.Run("one-commit", func(b *testing.B) { run(b, true) })
}
