package runner_test

import (
	"testing"

	"github.com/pneuma-cli/pneuma/report"
)

// loadReport reads the jobs of a report Run returned (they stay in
// report.json) into memory, for tests that index them.
func loadReport(t testing.TB, rep *report.Report) *report.Report {
	t.Helper()
	if rep == nil {
		return nil
	}
	l, err := rep.Load()
	if err != nil {
		t.Fatalf("load the run's report: %v", err)
	}
	return l
}
