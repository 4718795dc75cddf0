package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pneuma-cli/pneuma/internal/testbed/golden"
)

func TestMarkdownGolden(t *testing.T) {
	r := mixedReport()
	validJSON(t, r)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r, MarkdownOptions{MaxBytes: GitHubSummaryLimit}); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "summary.golden.md", buf.Bytes())
}

func TestMarkdownRows(t *testing.T) {
	r := mixedReport()
	r.Jobs[0].Name = "multi\nline | name"
	r.Jobs[2].Name = "*bold* <b>html</b> [link](x)"
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| Job ") && !strings.HasPrefix(line, "| --- ") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(r.Jobs)+1 {
		t.Fatalf("%d table rows, want %d jobs and a totals row:\n%s", len(rows), len(r.Jobs), buf.String())
	}
	for i, row := range rows {
		// An unescaped | would add a column: every row has 9 cells.
		if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 10 {
			t.Errorf("row %d has %d cell separators, want 10: %s", i, n, row)
		}
	}
	wantCells := []string{
		`| fix\|tests | ❌ failed (max\_turns) |`,
		`| \*bold\* \<b\>html\</b\> \[link\](x) | ⏭️ skipped (budget) | \$0.0000 | 0/0 | 0 | 0 (0) | 0ms | - | - |`,
		`| refactor | ⏹️ interrupted | \~\$0.0001 |`,
		`| **Total** | **interrupted** | **\$0.1623** | **51.5k/3.3k** | **24** | **38 (1)** | **3m07s** |  | **4 (+14/−2)** |`,
		// The succeeded jobs come last, folded.
		`| multi<br>line \| name | ✅ succeeded | \$0.0124 | 6.5k/80 | 3 | 7 (0) | 12.4s | ` + "`pneuma/20261122-130000-ab12/lint`" + ` | 3 (+10/−2) |`,
	}
	for i, want := range wantCells {
		if !strings.HasPrefix(rows[i], want) {
			t.Errorf("row %d:\n got %s\nwant %s…", i, rows[i], want)
		}
	}
	out := buf.String()
	if strings.ContainsRune(out, 0x1b) {
		t.Error("ANSI escape in the summary")
	}
	for _, want := range []string{"### ⏹️ pneuma run `20261122-130000-ab12`: interrupted", "4 jobs: 1 succeeded, 1 failed, 1 interrupted, 1 skipped",
		"<summary><code>fix|tests</code>: failed (max_turns)</summary>", "Reached maximum number of turns (20)"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestMarkdownFenceLongerThanText(t *testing.T) {
	r := mixedReport()
	r.Jobs[1].Error = "before\n```\n</details>\n```` after"
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "`````text\nbefore\n") {
		t.Errorf("error text not fenced by five backticks:\n%s", buf.String())
	}
}

func TestMarkdownTruncates(t *testing.T) {
	r := &Report{Schema: Schema, RunID: "big"}
	for i := range 2000 {
		r.Jobs = append(r.Jobs, Job{
			Name: fmt.Sprintf("job-%04d", i), Position: i, Status: StatusFailed, Reason: ReasonVerifyFailed,
			Error: strings.Repeat("verify output ", 50), Branch: fmt.Sprintf("pneuma/big/job-%04d", i),
		})
	}
	r.Tally(false)
	for _, limit := range []int{GitHubSummaryLimit, 64 << 10, 5000, 600, 100} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteMarkdown(&buf, r, MarkdownOptions{MaxBytes: limit}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if len(out) > limit {
				t.Errorf("summary is %d bytes, over the %d limit", len(out), limit)
			}
			if !utf8.ValidString(out) {
				t.Error("summary is not valid UTF-8 after truncation")
			}
			if limit >= 600 && !strings.Contains(out, "This summary was cut to stay under") {
				t.Errorf("no truncation note:\n%s", out[max(0, len(out)-500):])
			}
			if limit >= 5000 && !strings.Contains(out, "| **Total** |") {
				t.Error("truncated summary lost the totals row")
			}
			if limit >= 5000 && limit < GitHubSummaryLimit && !strings.Contains(out, " more |") {
				t.Error("truncated table does not count the rows left out")
			}
			if limit == GitHubSummaryLimit && len(out) < limit-20_000 {
				t.Errorf("summary uses %d of %d bytes: truncation left too much unused", len(out), limit)
			}
		})
	}
}

func TestAppendSummaryStaysUnderLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "step_summary.md")
	earlier := strings.Repeat("x", GitHubSummaryLimit-10_000)
	if err := os.WriteFile(path, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Report{Schema: Schema, RunID: "big"}
	for i := range 500 {
		r.Jobs = append(r.Jobs, Job{Name: fmt.Sprintf("job-%d", i), Status: StatusFailed, Error: strings.Repeat("e", 500)})
	}
	r.Tally(false)
	if err := AppendSummary(path, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > GitHubSummaryLimit || !strings.HasPrefix(string(data), earlier+"\n### ❌ pneuma run") {
		t.Errorf("step summary is %d bytes (limit %d) or lost what was there", len(data), GitHubSummaryLimit)
	}
	if !strings.Contains(string(data), "This summary was cut") {
		t.Error("no truncation note")
	}
	// A full file is an error, not a silent overflow.
	if err := AppendSummary(path, r); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("appending to a full summary: %v", err)
	}
}

// A summary of ten thousand jobs reads as its failures: their rows and
// errors come first, the succeeded jobs are folded in one <details> block
// that counts them, and the whole stays under GitHub's limit.
func TestMarkdownTenThousandFailuresFirst(t *testing.T) {
	r := &Report{Schema: Schema, RunID: "big", Status: RunFailed}
	for i := range 10000 {
		j := Job{Name: fmt.Sprintf("job-%05d", i), Position: i, Status: StatusSucceeded}
		if i%1000 == 999 {
			j.Status, j.Reason, j.Error = StatusFailed, ReasonVerifyFailed, "tests failed"
		}
		r.Jobs = append(r.Jobs, j)
	}
	r.Tally(false)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, r, MarkdownOptions{MaxBytes: GitHubSummaryLimit}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	total := strings.Index(out, "| **Total** |")
	fold := strings.Index(out, "<details><summary>9990 succeeded jobs</summary>")
	if total < 0 || fold < total || strings.Index(out, "| job-09999 | ❌ failed") > total ||
		strings.Index(out, "<summary><code>job-00999</code>") > fold || strings.Index(out, "| job-00000 | ✅") < fold {
		t.Fatalf("want the failed rows, the totals, their errors, then the succeeded folded:\n%.3000s", out)
	}
	if len(out) > GitHubSummaryLimit || !strings.HasSuffix(strings.TrimSpace(out), "</details>") && !strings.Contains(out, "This summary was cut") {
		t.Errorf("summary of %d bytes: unclosed fold or over the limit", len(out))
	}
}
