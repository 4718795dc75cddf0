package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/report"
)

// NewCmdReport builds `pneuma report` and its subcommands.
func NewCmdReport(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "report",
		Short: "Work with pneuma run reports",
		Long: `Merge, validate and show pneuma run reports (report.json, schema "pneuma.report/v1").

A sharded run (pneuma run --shard i/n, or shards detected from GitLab parallel,
Buildkite parallelism or a Kubernetes Indexed Job) writes one report per shard;
pneuma report merge joins them and writes the CI outputs of the whole plan.`,
	}
	c.AddCommand(
		NewCmdReportMerge(io, nil),
		NewCmdReportValidate(io),
		NewCmdReportShow(io),
	)
	return c
}

// ReportMergeOptions are the settings of `pneuma report merge`.
type ReportMergeOptions struct {
	Inputs  []string
	Output  string
	JUnit   string
	Summary string
}

const reportMergeLong = `Join the reports of the shards of one plan into a single report, with the totals
recomputed and the jobs in plan order, and optionally write its JUnit XML and
Markdown summary. Shards that sent no report are named in a warning and in the
summary. A --summary path equal to $GITHUB_STEP_SUMMARY is appended to, within
GitHub's 1 MiB limit; other files are overwritten. "-" writes to stdout.

EXIT STATUS
  0    the reports were merged (whatever the status of their jobs)
  1    an output could not be written
  2    usage error: an input is missing, unreadable, not a v1 report, or the
       inputs overlap (a job in two reports, the same shard twice, shards of
       different splits)`

// NewCmdReportMerge builds `pneuma report merge`. runF replaces the merge in
// tests.
func NewCmdReportMerge(io *IO, runF func(context.Context, *ReportMergeOptions) error) *cobra.Command {
	opts := &ReportMergeOptions{}
	c := &cobra.Command{
		Use:   "merge REPORT... -o FILE",
		Short: "Join shard reports into one",
		Long:  reportMergeLong,
		Example: `  pneuma report merge shard-*/report.json -o report.json
  pneuma report merge reports/*/report.json -o report.json --junit junit.xml --summary "$GITHUB_STEP_SUMMARY"`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &UsageError{Err: errors.New("merge needs at least one report"), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts.Inputs = args
			if opts.Output == "" {
				return &UsageError{Err: errors.New("merge needs -o FILE (- for stdout)"), Usage: c.UsageString()}
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return reportMerge(io, opts)
		},
	}
	f := c.Flags()
	f.StringVarP(&opts.Output, "output", "o", "", "write the merged report.json here (- for stdout)")
	f.StringVar(&opts.JUnit, "junit", "", "also write JUnit XML of the merged report to this file")
	f.StringVar(&opts.Summary, "summary", "", "also write a Markdown summary to this file (appended when it is $GITHUB_STEP_SUMMARY)")
	return c
}

func reportMerge(io *IO, o *ReportMergeOptions) error {
	reports := make([]*report.Report, len(o.Inputs))
	for i, path := range o.Inputs {
		// Each input's jobs stay in its file: the merge walks them.
		r, err := report.OpenJSON(path)
		if err != nil {
			return &ExitError{Code: ExitUsage, Err: err}
		}
		reports[i] = r
	}
	merged, err := report.Merge(reports...)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: describeMergeError(err, o.Inputs)}
	}
	if missing := merged.MissingShards(); len(missing) > 0 {
		names := make([]string, len(missing))
		for i, s := range missing {
			names[i] = fmt.Sprintf("%d/%d", s.Index, s.Total)
		}
		fmt.Fprintf(io.ErrOut, "pneuma: warning: no report from shard %s: their jobs are missing from the merged report\n", strings.Join(names, ", "))
	}

	var errs []error
	writeJSON := func(w goio.Writer) error {
		if err := report.EncodeTo(w, merged, true); err != nil {
			return err
		}
		_, err := goio.WriteString(w, "\n")
		return err
	}
	if o.Output != "-" {
		writeJSON = nil
	}
	if err := writeReportOutput(io, o.Output, writeJSON, func(path string) error { return report.WriteJSON(path, merged) }); err != nil {
		errs = append(errs, fmt.Errorf("-o: %w", err))
	}
	if o.JUnit != "" {
		if err := writeReportOutput(io, o.JUnit, func(w goio.Writer) error { return report.WriteJUnit(w, merged) }, nil); err != nil {
			errs = append(errs, fmt.Errorf("--junit: %w", err))
		}
	}
	if o.Summary != "" {
		var err error
		if step := io.Getenv("GITHUB_STEP_SUMMARY"); step != "" && samePath(o.Summary, step) {
			err = report.AppendSummary(o.Summary, merged)
		} else {
			err = writeReportOutput(io, o.Summary, func(w goio.Writer) error {
				return report.WriteMarkdown(w, merged, report.MarkdownOptions{})
			}, nil)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--summary: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.Output != "-" {
		if err := printReportTable(io, merged); err != nil {
			return err
		}
		fmt.Fprintf(io.ErrOut, "pneuma: merged %d reports (%d jobs) into %s\n", len(reports), merged.Totals.Jobs, o.Output)
	}
	return nil
}

// describeMergeError names the files behind a merge conflict.
func describeMergeError(err error, inputs []string) error {
	var dup *report.DuplicateJobsError
	if !errors.As(err, &dup) {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the reports overlap: %d jobs appear more than once (shards of different plans, or a report given twice?)", len(dup.Jobs))
	const show = 10
	for i, d := range dup.Jobs {
		if i == show {
			fmt.Fprintf(&b, "\n  and %d more", len(dup.Jobs)-show)
			break
		}
		files := make([]string, len(d.Reports))
		for k, idx := range d.Reports {
			files[k] = inputs[idx]
		}
		fmt.Fprintf(&b, "\n  job %q is in %s", d.Name, strings.Join(files, ", "))
	}
	return &mergeConflictError{msg: b.String(), err: err}
}

// mergeConflictError is a *report.DuplicateJobsError described with the
// names of the files involved.
type mergeConflictError struct {
	msg string
	err error
}

func (e *mergeConflictError) Error() string { return e.msg }
func (e *mergeConflictError) Unwrap() error { return e.err }

// writeReportOutput writes an output to path, or to stdout for "-". Files
// are written whole or not at all: atomic, when given, writes path itself;
// otherwise write's output goes to a temporary file renamed over path.
func writeReportOutput(io *IO, path string, write func(goio.Writer) error, atomic func(string) error) error {
	if path == "-" {
		return write(io.Out)
	}
	if atomic != nil {
		return atomic(path)
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = func() error {
		if _, err := tmp.Write(buf.Bytes()); err != nil {
			return err
		}
		if err := tmp.Chmod(0o644); err != nil {
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		return os.Rename(tmp.Name(), path)
	}()
	if err != nil {
		// Clean-up after a failure: a second error would hide the first, and
		// a Close after Close only says it was closed already.
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}

// printReportTable prints the human table of r on stdout. In GitHub Actions
// it is wrapped in stop-commands, so a job name that starts with "::" cannot
// run a workflow command.
func printReportTable(io *IO, r *report.Report) error {
	if io.Getenv("GITHUB_ACTIONS") == "true" {
		return report.StopCommands(io.Out, report.NewStopToken(), func(w goio.Writer) error { return report.Table(w, r) })
	}
	return report.Table(io.Out, r)
}

// NewCmdReportValidate builds `pneuma report validate`.
func NewCmdReportValidate(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check reports against the pneuma.report/v1 JSON Schema",
		Long: `Check each file against the JSON Schema of "pneuma.report/v1" (embedded in pneuma,
report/schema/report.v1.schema.json in its source) and the rules a schema cannot
state: unique job names and totals that add up.

EXIT STATUS
  0    every file is a valid report
  1    a file is invalid or unreadable (each problem is printed)
  2    usage error`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &UsageError{Err: errors.New("validate needs at least one file"), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return reportValidate(io, args)
		},
	}
}

func reportValidate(io *IO, files []string) error {
	bad := 0
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err == nil {
			err = report.Validate(data)
		}
		if err != nil {
			bad++
			fmt.Fprintf(io.ErrOut, "%s: %v\n", path, err)
			continue
		}
		fmt.Fprintf(io.Out, "%s: valid\n", path)
	}
	if bad > 0 {
		return &SilentError{Code: ExitFailed}
	}
	return nil
}

// NewCmdReportShow builds `pneuma report show`.
func NewCmdReportShow(io *IO) *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "show FILE",
		Short: "Print a report as a table, Markdown, JUnit XML or JSON",
		Example: `  pneuma report show .pneuma/runs/20261122-134501-3fa9/report.json
  pneuma report show --format junit report.json > junit.xml`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &UsageError{Err: fmt.Errorf("show takes one report, got %d arguments", len(args)), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			switch format {
			case "table", "markdown", "junit", "json":
			default:
				return &UsageError{Err: fmt.Errorf("unknown --format %q: want table, markdown, junit or json", format), Usage: c.UsageString()}
			}
			r, err := report.ReadJSON(args[0])
			if err != nil {
				return &ExitError{Code: ExitUsage, Err: err}
			}
			switch format {
			case "markdown":
				return report.WriteMarkdown(io.Out, r, report.MarkdownOptions{})
			case "junit":
				return report.WriteJUnit(io.Out, r)
			case "json":
				data, err := report.Encode(r)
				if err != nil {
					return err
				}
				_, err = io.Out.Write(data)
				return err
			default:
				return printReportTable(io, r)
			}
		},
	}
	c.Flags().StringVar(&format, "format", "table", "output format: table, markdown, junit or json")
	return c
}
