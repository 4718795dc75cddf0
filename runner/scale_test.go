package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/worktree"
)

// scaleJobs is the size of the scale benchmarks (issue 27).
const scaleJobs = 10000

// bigJobsFile is a jobs file of n jobs; bad makes every tenth job name an
// unknown field.
func bigJobsFile(n int, bad bool) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nconcurrency: 30\njobs:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - name: job-%05d\n    prompt: \"job %d: reply ok\"\n", i, i)
		if bad && i%10 == 0 {
			b.WriteString("    promt: typo\n")
		}
	}
	return []byte(b.String())
}

// BenchmarkDecode10k decodes and validates a jobs file of 10,000 jobs
// (issue 27: under a second).
func BenchmarkDecode10k(b *testing.B) {
	data := bigJobsFile(scaleJobs, false)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode("jobs.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeLargeFileReportsEveryError: a jobs file of 10,000 jobs with a
// thousand bad ones gets every problem at once, each with its line.
func TestDecodeLargeFileReportsEveryError(t *testing.T) {
	_, err := Decode("jobs.yaml", bigJobsFile(scaleJobs, true))
	if err == nil {
		t.Fatal("no error for 1,000 unknown fields")
	}
	msg := err.Error()
	if n := strings.Count(msg, "promt"); n != scaleJobs/10 {
		t.Errorf("the error names %d of the %d unknown fields", n, scaleJobs/10)
	}
	// the last bad job is job 10000, written on the file's last line
	last := fmt.Sprintf("jobs.yaml:%d:", 3+scaleJobs*2+scaleJobs/10)
	if !strings.Contains(msg, last) {
		t.Errorf("the error does not point at %s (the last bad line):\n%s", last, msg[max(0, len(msg)-300):])
	}
}

// BenchmarkBuildPlan10k plans 10,000 jobs in one repository: the
// repository and its base are checked once, not once per job.
func BenchmarkBuildPlan10k(b *testing.B) {
	dir := scaleRepo(b)
	path := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(path, bigJobsFile(scaleJobs, false), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := BuildPlan(context.Background(), f, PlanOptions{Binary: "claude", Git: worktree.New()}); err != nil {
			b.Fatal(err)
		}
	}
}

// scaleRepo is a git repository with one commit.
func scaleRepo(tb testing.TB) string {
	dir := tb.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@pneuma.invalid", "commit", "-q", "--allow-empty", "-m", "x"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}
