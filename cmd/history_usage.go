package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/text"
)

type historyUsageOptions struct {
	*historyOptions
	By  string
	UTC bool
}

func newCmdHistoryUsage(io *IO, parent *historyOptions) *cobra.Command {
	opts := &historyUsageOptions{historyOptions: parent}
	c := &cobra.Command{
		Use:   "usage",
		Short: "Tokens and estimated cost by day, session, model or project",
		Long: `Tokens and estimated cost of every API call in the history, grouped by
--by day (local date; --utc for UTC), session, model or project.

Calls are deduplicated by (message.id, requestId) across all files; a call a
fork copied stays with the session it was first made in. Subagent calls count
for their session; synthetic API-error entries are skipped. Calls of models
the price table does not know are counted but not priced (marked *, and
"unpriced": true in --json beside the partial cost_usd), and a warning on
stderr names their models.
--json prints an array of rows: the group key (date, session_id, model or
project), input_tokens, output_tokens, cache_read_input_tokens,
cache_creation_input_tokens, cost_usd, api_calls, and, by session, flags
("compacted", "interrupted": the transcript cannot match what was billed).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return historyErr(c.Context(), historyUsage(c.Context(), io, opts))
		},
	}
	opts.addSelectFlags(c)
	c.Flags().StringVar(&opts.By, "by", "day", "group by day, session, model or project")
	c.Flags().BoolVar(&opts.UTC, "utc", false, "group days in UTC instead of local time")
	return c
}

func historyUsage(ctx context.Context, io *IO, opts *historyUsageOptions) error {
	by := strings.ToLower(opts.By)
	switch by {
	case history.ByDay, history.BySession, history.ByModel, history.ByProject:
	default:
		return &UsageError{Err: fmt.Errorf("--by %q: want day, session, model or project", opts.By)}
	}
	corpus, err := opts.scan(ctx, io, false)
	if err != nil {
		return err
	}
	loc := time.Local
	if opts.UTC {
		loc = time.UTC
	}
	rows := corpus.UsageBy(by, loc)
	defer warnUnpriced(io, corpus.Total())
	if opts.JSON {
		if err := writeUsageJSON(io, rows, corpus); err != nil {
			return err
		}
		return reportWarnings(io, corpus.Warnings, corpus.FilesRead)
	}
	if err := reportWarnings(io, corpus.Warnings, corpus.FilesRead); err != nil {
		return err
	}
	if err := writeUsageTable(io, by, rows, corpus.Total()); err != nil {
		return err
	}
	if s := corpus.Stats; s.Malformed+s.Oversized > 0 {
		fmt.Fprintf(io.ErrOut, "pneuma: skipped %d malformed and %d oversized lines\n", s.Malformed, s.Oversized)
	}
	return nil
}

// writeUsageJSON prints the usage rows, their total and the warnings as JSON.
func writeUsageJSON(io *IO, rows []history.UsageRow, corpus *history.Corpus) error {
	if rows == nil {
		rows = []history.UsageRow{}
	}
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Rows     []history.UsageRow `json:"rows"`
		Total    history.Totals     `json:"total"`
		Warnings []history.Warning  `json:"warnings"`
	}{rows, corpus.Total(), nonNil(corpus.Warnings)})
}

// writeUsageTable prints the usage rows as a table for people, with notes
// on figures that cannot match the bill.
func writeUsageTable(io *IO, by string, rows []history.UsageRow, t history.Totals) error {
	// Numbers align right; the key column is padded so it reads left-aligned.
	keys := make([]string, len(rows))
	width := len("TOTAL")
	var flagged, unpriced bool
	for i, r := range rows {
		keys[i] = r.Key()
		if by == history.ByProject {
			keys[i] = text.Shorten(keys[i], 50)
		}
		if billingFlags(r.Flags) {
			keys[i] += " !"
			flagged = true
		}
		unpriced = unpriced || r.UnpricedCalls > 0
		width = max(width, len([]rune(keys[i])))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-len([]rune(s))) }
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tCALLS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST USD\t\n", pad(strings.ToUpper(by)))
	for i, r := range rows {
		cost := fmt.Sprintf("%.4f", r.CostUSD)
		if r.UnpricedCalls > 0 {
			cost += "*"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", pad(keys[i]), r.APICalls,
			history.Thousands(r.InputTokens), history.Thousands(r.OutputTokens),
			history.Thousands(r.CacheReadInputTokens), history.Thousands(r.CacheCreationInputTokens), cost)
	}
	fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.4f\t\n", pad("TOTAL"), t.APICalls,
		history.Thousands(t.InputTokens), history.Thousands(t.OutputTokens),
		history.Thousands(t.CacheReadInputTokens), history.Thousands(t.CacheCreationInputTokens), t.CostUSD)
	if err := tw.Flush(); err != nil {
		return err
	}
	if flagged {
		fmt.Fprintln(io.Out, "! the transcript cannot match the bill exactly: it lacks the /compact summary call (compacted), or keeps an interrupted response's unbilled partial tokens (interrupted); --json lists the flags")
	}
	if unpriced {
		fmt.Fprintf(io.Out, "* includes calls of models without a price (%s); add them with --prices FILE\n", strings.Join(t.UnpricedModels, ", "))
	}
	return nil
}

// warnUnpriced says on stderr that cost_usd leaves out calls of models
// without a price: a cost pneuma cannot price is never a silent 0.
func warnUnpriced(io *IO, t history.Totals) {
	if t.UnpricedCalls == 0 {
		return
	}
	fmt.Fprintf(io.ErrOut, "pneuma: %d API calls of models without a price (%s) are not in cost_usd (rows with them have \"unpriced\": true); add their prices with --prices FILE\n",
		t.UnpricedCalls, strings.Join(t.UnpricedModels, ", "))
}

// billingFlags reports flags that make a session's figure differ from its bill.
func billingFlags(flags []string) bool {
	return slices.ContainsFunc(flags, func(f string) bool {
		return f == history.FlagCompacted || f == history.FlagInterrupted
	})
}
