package jobfile

import (
	"fmt"
	"strings"
	"testing"
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
