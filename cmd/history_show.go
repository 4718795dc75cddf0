package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
)

type historyShowOptions struct {
	*historyOptions
	Session  string
	Format   string
	Output   string
	Fold     int
	NoRedact bool
}

func newCmdHistoryShow(io *IO, parent *historyOptions) *cobra.Command {
	opts := &historyShowOptions{historyOptions: parent}
	c := &cobra.Command{
		Use:   "show SESSION",
		Short: "Export one session as Markdown, JSON, HTML or text (secrets redacted)",
		Long: `Export one session, named by full id, unique id prefix or transcript path.

Formats: md (default), json (the normalised structure "pneuma.history.session/v1":
header fields, "entries" of records with blocks, subagents nested as records
of type "subagent" with their own "entries", then "usage" and "read_stats"),
html (one self-contained page; tool results and subagents collapse) and text.
Tool inputs and results are folded to --fold characters in md, text and html.
Secrets are redacted in every format: tokens of known shapes (sk-ant-, ghp_,
github_pat_, AKIA, xoxb-…), PEM private keys, passwords in URLs, and values
that look random given to names like API_KEY, token or password; ordinary code
(key=lambda x: x.name) is left alone. --no-redact keeps everything. Terminal
escape codes are removed from every format.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			opts.Session = args[0]
			return historyErr(c.Context(), historyShow(c.Context(), io, opts))
		},
	}
	opts.addFlags(c)
	return c
}

// addFlags adds show's flags to c (show, and history itself: `pneuma
// history SESSION` is `pneuma history show SESSION`).
func (o *historyShowOptions) addFlags(c *cobra.Command) {
	c.Flags().StringVarP(&o.Format, "format", "f", "md", "md, json, html or text")
	c.Flags().StringVarP(&o.Output, "output", "o", "", "write to this file instead of stdout")
	c.Flags().BoolVar(&o.NoRedact, "no-redact", false, "keep secrets as they are (terminal escape codes are still removed)")
	c.Flags().IntVar(&o.Fold, "fold", 0, "fold tool inputs and results to this many characters (0: format default, -1: never)")
}

func historyShow(ctx context.Context, io *IO, opts *historyShowOptions) error {
	format, err := history.ParseFormat(opts.Format)
	if err != nil {
		return &UsageError{Err: err}
	}
	prices, err := opts.prices()
	if err != nil {
		return err
	}
	s, err := history.Resolve(ctx, opts.configDir(io), opts.Session)
	if err != nil {
		var amb *history.AmbiguousError
		if errors.As(err, &amb) {
			return &UsageError{Err: err}
		}
		return unreadable(err)
	}
	w, done, err := createOutput(io, opts.Output)
	if err != nil {
		return err
	}
	warn := func(w history.Warning) { fmt.Fprintf(io.ErrOut, "pneuma: warning: skipped %s\n", w) }
	err = history.Export(ctx, w, s.Path, history.ExportOptions{Format: format, Prices: prices, Fold: opts.Fold, Warn: warn, NoRedact: opts.NoRedact})
	if derr := done(err == nil); err == nil {
		err = derr
	}
	return unreadable(err)
}

// unreadable gives a session that cannot be read (a named pipe, a
// directory, a symlink loop, permission denied) exit code 3.
func unreadable(err error) error {
	var u *history.UnreadableError
	if errors.As(err, &u) {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	return err
}
