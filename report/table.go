package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Table writes the human summary of r printed at the end of `pneuma run` and
// by `pneuma report show`: one row per job (status with reason, cost, tokens
// in/out, turns, time, changes) and a totals row, aligned, without colours.
// A cost marked ~ is an estimate. The totals row's time is the run's
// wall-clock time.
func Table(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(cells ...string) {
		for i, c := range cells {
			cells[i] = tableCell(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	row("JOB", "STATUS", "COST", "TOKENS IN/OUT", "TURNS", "TOOLS (DENIED)", "TIME", "CHANGES")
	var files, ins, del, calls, denied int
	estimated := false
	// A source that fails leaves out the rest; the totals row is the report's.
	_ = r.EachJob(func(jp *Job) error {
		j := *jp
		estimated = estimated || j.CostEstimated
		row(j.Name, statusText(j), jobCost(j), tokens(j.Usage), strconv.Itoa(j.NumTurns), toolCounts(j.ToolCalls, j.ToolDenials), jobDuration(j), changes(j))
		calls += j.ToolCalls
		denied += j.ToolDenials
		files += j.FilesChanged
		ins += j.Insertions
		del += j.Deletions
		return nil
	})
	t := r.Totals
	cost := formatUSD(t.CostUSD)
	if estimated {
		cost = "~" + cost
	}
	total := fmt.Sprintf("TOTAL (%d jobs)", t.Jobs)
	if t.Jobs == 1 {
		total = "TOTAL (1 job)"
	}
	row(total, fmt.Sprintf("%s (%d/%d succeeded)", r.Status, t.Succeeded, t.Jobs), cost, totalTokens(t), strconv.Itoa(t.NumTurns),
		toolCounts(calls, denied), formatDuration(runDuration(r)), changes(Job{FilesChanged: files, Insertions: ins, Deletions: del}))
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// tableCell keeps a cell on one line and free of escapes, so a job name
// cannot break the alignment or drive the terminal.
func tableCell(s string) string {
	s = CleanText(s)
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
}
