package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
)

type historyArchiveOptions struct {
	*historyOptions
	Sessions []string
	Dest     string
}

func newCmdHistoryArchive(io *IO, parent *historyOptions) *cobra.Command {
	opts := &historyArchiveOptions{historyOptions: parent}
	c := &cobra.Command{
		Use:   "archive [SESSION...] -o DEST",
		Short: "Copy sessions (with subagents and tool results) to a directory or .tar.gz",
		Long: `Copy sessions out of Claude Code's history, which it deletes after 30 days by
default. Name sessions by id, prefix or path, or select them with --project,
--since and --until. DEST is a directory or a file ending in .tar.gz; it keeps
the projects/<dir>/ layout, so it can be read back with --config-dir DEST.`,
		RunE: func(c *cobra.Command, args []string) error {
			opts.Sessions = args
			return historyErr(c.Context(), historyArchive(c.Context(), io, opts))
		},
	}
	opts.addSelectFlags(c)
	c.Flags().StringVarP(&opts.Dest, "output", "o", "", "destination directory or .tar.gz file (required)")
	return c
}

func historyArchive(ctx context.Context, io *IO, opts *historyArchiveOptions) error {
	if opts.Dest == "" {
		return &UsageError{Err: fmt.Errorf("archive needs a destination: -o DIR or -o FILE.tar.gz")}
	}
	ids := opts.Sessions
	if len(ids) == 0 {
		filter, err := opts.filter(time.Now())
		if err != nil {
			return err
		}
		if filter.Project == "" && filter.Since.IsZero() && filter.Until.IsZero() {
			return &UsageError{Err: fmt.Errorf("name sessions, or select them with --project, --since or --until")}
		}
		corpus, err := history.Scan(ctx, opts.configDir(io), history.ScanOptions{Filter: filter, Summary: true, CacheDir: opts.cacheDir(io)})
		if err != nil {
			return err
		}
		for _, s := range corpus.Sessions() {
			ids = append(ids, s.Path)
		}
		if len(ids) == 0 {
			return fmt.Errorf("no sessions match")
		}
	}
	if err := history.Archive(ctx, opts.configDir(io), ids, opts.Dest); err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Archived    int      `json:"archived"`
			Destination string   `json:"destination"`
			Sessions    []string `json:"sessions"`
		}{len(ids), opts.Dest, ids})
	}
	fmt.Fprintf(io.ErrOut, "archived %d sessions to %s\n", len(ids), opts.Dest)
	return nil
}
