package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/golden"
)

func TestTableGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Table(&buf, mixedReport()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "table.golden.txt", buf.Bytes())
}

func TestTableAligned(t *testing.T) {
	r := mixedReport()
	r.Jobs[0].Name = "tab\tand\nnewline \x1b[31mred\x1b[0m"
	var buf bytes.Buffer
	if err := Table(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(r.Jobs)+2 {
		t.Fatalf("%d lines, want a header, %d jobs and a total:\n%s", len(lines), len(r.Jobs), buf.String())
	}
	// Columns line up: STATUS starts at the same place on every line.
	col := strings.Index(lines[0], "STATUS")
	for _, l := range lines[1:] {
		if l[col-2:col] != "  " || l[col] == ' ' {
			t.Errorf("misaligned line %q (STATUS at %d)", l, col)
		}
	}
	if !strings.HasPrefix(lines[1], "tab and newline red ") {
		t.Errorf("job name not flattened and cleaned: %q", lines[1])
	}
	if last := strings.Join(strings.Fields(lines[len(lines)-1]), " "); !strings.HasPrefix(last, "TOTAL (4 jobs) interrupted (1/4 succeeded) ~$0.1623 51.5k/3.3k 24 38 (1) 3m07s 4 files +14/-2") {
		t.Errorf("totals row %q", lines[len(lines)-1])
	}
}
