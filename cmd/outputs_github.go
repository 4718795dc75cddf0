package cmd

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pneuma-cli/pneuma/report"
)

// githubOutput is one step output of `pneuma run` in GitHub Actions.
type githubOutput struct{ name, value string }

// githubOutputs are the run's outputs for $GITHUB_OUTPUT, the same with or
// without pneuma's action (action.yml): status, cost-usd, succeeded, failed
// (every job that did not succeed: failed, skipped or interrupted), run-id,
// and the absolute paths of report (--report, else the run directory's
// report.json) and junit (empty without --junit).
func githubOutputs(o *RunOptions, r *report.Report, runReport string) []githubOutput {
	rep := o.Report
	if rep == "" {
		rep = runReport
	}
	return []githubOutput{
		{"status", r.Status},
		{"cost-usd", strconv.FormatFloat(r.Totals.CostUSD, 'f', -1, 64)},
		{"succeeded", strconv.Itoa(r.Totals.Succeeded)},
		{"failed", strconv.Itoa(r.Totals.Jobs - r.Totals.Succeeded)},
		{"run-id", r.RunID},
		{"report", absPath(rep)},
		{"junit", absPath(o.JUnit)},
	}
}

// appendGitHubOutput appends outputs to the $GITHUB_OUTPUT file at path, in
// the runner's name=value form, or its delimited form for a value with a
// line break.
func appendGitHubOutput(path string, outputs []githubOutput) error {
	var b strings.Builder
	for _, out := range outputs {
		if !strings.ContainsAny(out.value, "\r\n") {
			fmt.Fprintf(&b, "%s=%s\n", out.name, out.value)
			continue
		}
		delim, err := delimiter()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s<<%s\n%s\n%s\n", out.name, delim, out.value, delim)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(b.String())
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// delimiter is a random heredoc delimiter no value can contain by chance.
func delimiter() (string, error) {
	buf := make([]byte, 12)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("delimiter: %w", err)
	}
	return "ghadelimiter_" + hex.EncodeToString(buf), nil
}

func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
