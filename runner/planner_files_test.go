package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// The files a job names are read as regular files of bounded size: a
// prompt_file or output_schema of /dev/zero or a FIFO is a plan problem at
// once (it was an out-of-memory crash and a hang), and with roots a file
// outside them is refused.
func TestPlanClientFiles(t *testing.T) {
	repo := claudetest.GitRepo(t)
	fifo := filepath.Join(repo, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, path, want string
		roots             []string
	}{
		{"prompt_file", "/dev/zero", "not a regular file", nil},
		{"output_schema", "/dev/zero", "not a regular file", nil},
		{"prompt_file", fifo, "not a regular file", nil},
		{"output_schema", fifo, "not a regular file", nil},
		{"prompt_file", outside, "not under any root", []string{repo}},
		{"output_schema", outside, "not under any root", []string{repo}},
	} {
		yaml := fmt.Sprintf("version: 1\njobs:\n  - name: a\n    repo: %s\n    %s: %s\n", repo, tc.field, tc.path)
		if tc.field == "output_schema" {
			yaml += "    prompt: hi\n"
		}
		f, err := jobfile.Decode(filepath.Join(repo, "jobs.yaml"), []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := runner.BuildPlan(context.Background(), f, runner.PlanOptions{RunID: "files", Binary: "claude", Roots: tc.roots})
			done <- err
		}()
		select {
		case err := <-done:
			var de *jobfile.DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret\n") {
				t.Errorf("%s %s: %v, want a problem %q", tc.field, tc.path, err, tc.want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s %s: the plan blocked", tc.field, tc.path)
		}
	}
}
