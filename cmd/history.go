package cmd

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/runner"
)

// historyOptions are the settings every `pneuma history` subcommand shares.
type historyOptions struct {
	ConfigDir        string
	PricesFile       string
	Project          string
	IncludeWorktrees bool
	Since, Until     string
	JSON             bool
	NoCache          bool
}

// NewCmdHistory builds `pneuma history`.
func NewCmdHistory(io *IO) *cobra.Command {
	opts := &historyOptions{}
	show := &historyShowOptions{historyOptions: opts}
	c := &cobra.Command{
		Use:   "history [SESSION]",
		Short: "Find, export and account for Claude Code sessions",
		Long: `Read Claude Code's session history ($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects).

Sessions are named by full id, unique id prefix, or transcript path. Costs are
estimated from the transcripts (deduplicated by message id and request id,
subagents included, forks charged only for their own calls) with a price table
embedded in pneuma; --prices FILE overrides it. A transcript does not hold the
/compact summary call, and keeps the partial tokens of interrupted responses
that the CLI does not bill: such sessions are flagged.

Files that cannot be read (named pipes or directories named like transcripts,
symlink loops, permission denied) are skipped with a warning on stderr and in
the "warnings" list of --json output; the command fails (exit 3) only when
nothing could be read.

"pneuma history SESSION" exports the session like "pneuma history show SESSION".`,
		Args: historyArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			show.Session = args[0]
			return historyErr(c.Context(), historyShow(c.Context(), io, show))
		},
	}
	show.addFlags(c)
	c.SuggestionsMinimumDistance = 2
	c.PersistentPreRun = func(c *cobra.Command, args []string) {
		// Reading history stops at the first signal; nothing is left to kill.
		setStopNotice(c.Context(), "stopping history now", "stopping history now")
	}
	c.PersistentFlags().StringVar(&opts.ConfigDir, "config-dir", "", "Claude Code config directory (default $CLAUDE_CONFIG_DIR or ~/.claude)")
	c.PersistentFlags().StringVar(&opts.PricesFile, "prices", "", "JSON price table laid over the embedded one")
	c.PersistentFlags().BoolVar(&opts.NoCache, "no-cache", false, "read every transcript, ignoring the index of per-file summaries in the user cache directory")
	c.AddCommand(
		newCmdHistoryList(io, opts),
		newCmdHistoryShow(io, opts),
		newCmdHistoryUsage(io, opts),
		newCmdHistoryArchive(io, opts),
	)
	return c
}

func (o *historyOptions) configDir(io *IO) string {
	if o.ConfigDir != "" {
		return o.ConfigDir
	}
	return history.ConfigDir(io.Getenv)
}

// cacheDir is where history keeps its index of per-file summaries:
// $XDG_CACHE_HOME/pneuma or ~/.cache/pneuma ("" with --no-cache or no home).
func (o *historyOptions) cacheDir(io *IO) string {
	if o.NoCache {
		return ""
	}
	base := io.Getenv("XDG_CACHE_HOME")
	if !filepath.IsAbs(base) {
		base = ""
		if h := io.Getenv("HOME"); filepath.IsAbs(h) {
			base = filepath.Join(h, ".cache")
		}
	}
	// Never create a home directory that is not there.
	if base == "" {
		return ""
	}
	if _, err := os.Stat(filepath.Dir(base)); err != nil {
		return ""
	}
	return filepath.Join(base, "pneuma")
}

// scan reads the sessions the options select, priced; summary also reads
// what list shows of each session (first prompt, counts).
func (o *historyOptions) scan(ctx context.Context, io *IO, summary bool) (*history.Corpus, error) {
	filter, err := o.filter(time.Now())
	if err != nil {
		return nil, err
	}
	prices, err := o.prices()
	if err != nil {
		return nil, err
	}
	limitMemory(io)
	return history.Scan(ctx, o.configDir(io), history.ScanOptions{Filter: filter, Prices: prices, Summary: summary, CacheDir: o.cacheDir(io)})
}

func (o *historyOptions) prices() (*history.PriceTable, error) {
	if o.PricesFile == "" {
		return history.DefaultPrices(), nil
	}
	return history.LoadPrices(o.PricesFile)
}

// addSelectFlags adds the flags that select sessions.
func (o *historyOptions) addSelectFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.Project, "project", "", "only sessions run in this directory")
	c.Flags().BoolVar(&o.IncludeWorktrees, "include-worktrees", false, "with --project, also sessions run in git worktrees of it")
	c.Flags().StringVar(&o.Since, "since", "", "from this date (YYYY-MM-DD, local time), time (RFC 3339) or age (7d, 12h)")
	c.Flags().StringVar(&o.Until, "until", "", "up to this date (inclusive), time or age")
	c.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
}

// filter turns the selection flags into a history.Filter.
func (o *historyOptions) filter(now time.Time) (history.Filter, error) {
	f := history.Filter{IncludeWorktrees: o.IncludeWorktrees}
	if o.Project != "" {
		p, err := resolveDir(o.Project)
		if err != nil {
			return f, err
		}
		f.Project = p
		// Sessions of pneuma's own worktrees belong to the repository even
		// after the worktrees are removed; the runner says where they live.
		f.WorktreeRoots = []string{runner.RepoLayout(p).WorktreesRoot()}
	}
	var err error
	if f.Since, err = parseWhen(o.Since, now, false); err != nil {
		return f, &UsageError{Err: fmt.Errorf("--since: %w", err)}
	}
	if f.Until, err = parseWhen(o.Until, now, true); err != nil {
		return f, &UsageError{Err: fmt.Errorf("--until: %w", err)}
	}
	return f, nil
}

// resolveDir makes dir absolute and resolves symlinks, as the CLI does with
// its cwd.
func resolveDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// parseWhen reads a date, an RFC 3339 time or an age ("7d", "36h"). A bare
// date as an upper bound includes the whole day.
func parseWhen(s string, now time.Time, upper bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{time.DateOnly, "20060102"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			if upper {
				t = t.AddDate(0, 0, 1)
			}
			return t, nil
		}
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("cannot read %q as a date (YYYY-MM-DD), time (RFC 3339) or age (7d, 12h)", s)
}

// historyErr turns the error of a history command stopped by a signal into
// a quiet exit 130 (the signal handler said why).
// historyArgs takes at most one session. Anything else (a misspelt
// command, a second argument) is a usage error, exit 2.
func historyArgs(c *cobra.Command, args []string) error {
	if len(args) > 1 {
		return &UsageError{Err: fmt.Errorf("pneuma history takes one session (or a command), not %d arguments: %q", len(args), args), Usage: c.UsageString()}
	}
	if len(args) == 0 || looksLikeSession(args[0]) {
		return nil
	}
	hint := ""
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(" (did you mean %s?)", strings.Join(s, ", "))
	}
	return &UsageError{Err: fmt.Errorf("%q is neither a command of pneuma history nor a session id or transcript path%s", args[0], hint), Usage: c.UsageString()}
}

// looksLikeSession says whether arg could name a session: a transcript
// path, or an id or id prefix (hex digits and dashes).
func looksLikeSession(arg string) bool {
	if strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".jsonl") {
		return true
	}
	for _, r := range arg {
		if !strings.ContainsRune("0123456789abcdefABCDEF-", r) {
			return false
		}
	}
	return arg != ""
}

func historyErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return &SilentError{Code: ExitInterrupted}
	}
	return err
}

// reportWarnings prints each skipped file on stderr. Skipped files fail the
// command only when nothing at all could be read.
func reportWarnings(io *IO, ws []history.Warning, read int) error {
	for _, w := range ws {
		fmt.Fprintf(io.ErrOut, "pneuma: warning: skipped %s\n", w)
	}
	if len(ws) > 0 && read == 0 {
		return &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("no transcript could be read (%d skipped)", len(ws))}
	}
	return nil
}

// nonNil returns ws, or an empty list for JSON output.
func nonNil(ws []history.Warning) []history.Warning {
	if ws == nil {
		return []history.Warning{}
	}
	return ws
}

// limitMemory keeps a scan of a large history within a bounded heap unless
// the user set GOMEMLIMIT.
func limitMemory(io *IO) {
	if io.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(96 << 20)
	}
}

// createOutput opens -o FILE, or returns the command's stdout.
func createOutput(io *IO, path string) (w goio.Writer, done func(ok bool) error, err error) {
	if path == "" || path == "-" {
		return io.Out, func(bool) error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("create output: %w", err)
	}
	return f, func(ok bool) error {
		cerr := f.Close()
		if !ok {
			os.Remove(path)
			return nil
		}
		if cerr != nil {
			return fmt.Errorf("write %s: %w", path, cerr)
		}
		return nil
	}, nil
}
