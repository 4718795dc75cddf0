package runner

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// reapOrphan ends a process only while it works in the session's worktree
// (a pid reused by another process is left alone).
func TestReapOrphan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inDir  bool
		reaped bool
	}{
		{"the session's CLI", true, true},
		{"another process", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			cmd := exec.Command("sleep", "30")
			cmd.Dir = other
			if tc.inDir {
				cmd.Dir = dir
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
			reapOrphan(cmd.Process.Pid, dir, 100*time.Millisecond)
			select {
			case <-exited:
				if !tc.reaped {
					t.Fatal("a process outside the worktree was killed")
				}
			case <-time.After(2 * time.Second):
				if tc.reaped {
					t.Fatal("the orphaned CLI is still running")
				}
			}
		})
	}
}
