package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startRun starts `pneuma run -j 3` of the liveBed's jobs as another
// process (no terminal: its line log goes to out) and returns its exit,
// delivered once.
func startRun(t *testing.T, b *liveBed, exe string, out *lockedBuffer) <-chan error {
	t.Helper()
	c := exec.Command(exe, "run", "-j", "3", b.jobs)
	c.Dir, c.Env = b.repo, b.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // a run the test left going
	})
	return done
}

// TestStatusWatchInTmux follows a run another process runs with `pneuma
// status --watch` in tmux panes, as a person in a second terminal would:
// the running jobs show with their current tool and the failure above
// them, the clocks move; Ctrl-C in one pane stops only that view (it says
// the run goes on, not that jobs stop) and the run goes on; when the run
// ends the other pane shows every job's final line and the run's totals,
// and exits by itself.
func TestStatusWatchInTmux(t *testing.T) {
	b := newLiveBed(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var runOut lockedBuffer
	runDone := startRun(t, b, exe, &runOut)
	id := filepath.Base(onlyRunDir(t, b.repo))

	watch := startPane(t, 120, 30, b.repo, b.env, exe, "status", "--watch", id)
	quit := startPane(t, 120, 30, b.repo, b.env, exe, "status", "--watch", id)
	mid := watch.waitFor("both waiting jobs in Bash and the failure", 120*time.Second, func(s string) bool {
		return strings.Count(s, "Bash: while") == 2 && strings.Contains(s, "✗ gamma-broken")
	})
	t.Logf("status --watch mid-run:\n%s", mid)
	for _, want := range []string{"run " + id, "failed (api_error)", "2 running", "(1/3"} {
		if !strings.Contains(mid, want) {
			t.Errorf("mid-run pane lacks %q", want)
		}
	}
	first := runningLine(mid, "alpha-refactor")
	if !strings.Contains(first, "1 turn") {
		t.Errorf("alpha-refactor's running line lacks its turn: %q", first)
	}
	checkOnce(t, mid)
	moved := watch.waitFor("alpha-refactor's clock to move", 30*time.Second, func(s string) bool {
		l := runningLine(s, "alpha-refactor")
		return l != first && strings.Contains(l, "Bash: while")
	})
	checkOnce(t, moved)

	quit.waitFor("the second view's running jobs", 60*time.Second, func(s string) bool {
		return strings.Count(s, "Bash: while") == 2
	})
	if out, err := exec.Command(quit.tmux, "-S", quit.sock, "send-keys", "C-c").CombinedOutput(); err != nil {
		t.Fatalf("tmux send-keys C-c: %v: %s", err, out)
	}
	if status := quit.waitDead(30 * time.Second); status != "0" {
		t.Errorf("status --watch after Ctrl-C exited %s, want 0", status)
	}
	stopped := quit.capture()
	t.Logf("status --watch after Ctrl-C:\n%s", stopped)
	if !strings.Contains(stopped, "stopped watching; run "+id+" goes on") || strings.Contains(stopped, "stopping jobs") {
		t.Errorf("after Ctrl-C the pane does not say that the run goes on (or says jobs stop):\n%s", stopped)
	}
	select {
	case err := <-runDone:
		t.Fatalf("the run ended when a watcher was stopped: %v\n%s", err, runOut.String())
	default:
	}
	if exited, _ := procExit(watch.pid()); exited {
		t.Fatalf("the other watcher ended with it:\n%s", watch.capture())
	}

	if err := os.WriteFile(b.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runDone:
		if code := exitCode(err); code != 1 {
			t.Errorf("pneuma run exited %d, want 1 (a job failed)\n%s", code, runOut.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not finish after its jobs were released:\n%s", runOut.String())
	}
	if status := watch.waitDead(60 * time.Second); status != "0" {
		t.Errorf("status --watch exited %s at the end of the run, want 0", status)
	}
	end := watch.capture()
	t.Logf("status --watch at the end:\n%s", end)
	for _, want := range []string{"✗ gamma-broken  failed", "✓ alpha-refactor  succeeded", "✓ beta-docs  succeeded", "3/3 done · 0 running", " · failed · "} {
		if !strings.Contains(end, want) {
			t.Errorf("final pane lacks %q", want)
		}
	}
	if strings.Contains(end, "Bash: while") || strings.Contains(end, "█") {
		t.Errorf("the live region was not erased at the end")
	}
}
