package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/text"
)

func newCmdHistoryList(io *IO, opts *historyOptions) *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions: when, where, what was asked, what it cost",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return historyErr(c.Context(), historyList(c.Context(), io, opts))
		},
	}
	opts.addSelectFlags(c)
	return c
}

func historyList(ctx context.Context, io *IO, opts *historyOptions) error {
	corpus, err := opts.scan(ctx, io, true)
	if err != nil {
		return err
	}
	sessions := corpus.Sessions()
	if opts.JSON {
		if sessions == nil {
			sessions = []*history.SessionSummary{}
		}
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		err := enc.Encode(struct {
			Sessions []*history.SessionSummary `json:"sessions"`
			Warnings []history.Warning         `json:"warnings"`
		}{sessions, nonNil(corpus.Warnings)})
		if err != nil {
			return err
		}
		return reportWarnings(io, corpus.Warnings, corpus.FilesRead)
	}
	if err := reportWarnings(io, corpus.Warnings, corpus.FilesRead); err != nil {
		return err
	}
	if len(sessions) == 0 {
		fmt.Fprintf(io.ErrOut, "no sessions in %s\n", history.ProjectsDir(opts.configDir(io)))
		return nil
	}
	ids := make([]string, len(sessions))
	for i, s := range sessions {
		ids[i] = s.ID
	}
	n := uniquePrefixLen(ids, 8)
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPROJECT\tSTARTED\tLAST ACTIVITY\tPROMPTS\tCALLS\tTOKENS\tCOST\tAGENTS\tFIRST PROMPT")
	for _, s := range sessions {
		cost := fmt.Sprintf("$%.2f", s.CostUSD)
		if s.UnpricedCalls > 0 {
			cost += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%d\t%s\n",
			s.ID[:min(n, len(s.ID))], text.Shorten(s.Project, 40), stamp(s.Started), stamp(s.LastActivity),
			s.Prompts, s.APICalls, history.Thousands(s.Total()), cost, s.Subagents, text.Shorten(s.FirstPrompt, 60))
	}
	return tw.Flush()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

// uniquePrefixLen is the shortest length (at least min) at which every id
// is distinguished from the others, so that a listed prefix can be passed
// to `history show`.
func uniquePrefixLen(ids []string, least int) int {
	n := least
	for {
		seen := make(map[string]bool, len(ids))
		clash, longest := false, 0
		for _, id := range ids {
			longest = max(longest, len(id))
			p := id[:min(n, len(id))]
			if seen[p] {
				clash = true
				break
			}
			seen[p] = true
		}
		if !clash || n >= longest {
			return n
		}
		n++
	}
}
