package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/pneuma-cli/pneuma/report"
)

// writeOutputs writes the CI outputs a run asked for: a copy of report.json,
// JUnit XML, a Markdown summary (and $GITHUB_STEP_SUMMARY), the step outputs
// in $GITHUB_OUTPUT (outputs_github.go), and GitHub annotations for failed
// jobs. It tries every output and returns all errors.
func writeOutputs(io *IO, o *RunOptions, r *report.Report, github bool, runReport string) error {
	var errs []error
	if o.Report != "" {
		if err := report.WriteJSON(o.Report, r); err != nil {
			errs = append(errs, fmt.Errorf("--report: %w", err))
		}
	}
	if o.JUnit != "" {
		if err := writeFile(o.JUnit, func(f *os.File) error { return report.WriteJUnit(f, r) }); err != nil {
			errs = append(errs, fmt.Errorf("--junit: %w", err))
		}
	}
	if o.Summary != "" {
		if err := writeFile(o.Summary, func(f *os.File) error {
			return report.WriteMarkdown(f, r, report.MarkdownOptions{})
		}); err != nil {
			errs = append(errs, fmt.Errorf("--summary: %w", err))
		}
	}
	if path := io.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		if err := report.AppendSummary(path, r); err != nil {
			errs = append(errs, fmt.Errorf("GITHUB_STEP_SUMMARY: %w", err))
		}
	}
	if path := io.Getenv("GITHUB_OUTPUT"); path != "" {
		if err := appendGitHubOutput(path, githubOutputs(o, r, runReport)); err != nil {
			errs = append(errs, fmt.Errorf("GITHUB_OUTPUT: %w", err))
		}
	}
	if github {
		// Annotations go to stderr; if stderr cannot be written there is
		// nowhere left to report that, and the report files hold the same.
		_ = report.GitHubAnnotations(io.ErrOut, r)
	}
	return errors.Join(errs...)
}

func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}
