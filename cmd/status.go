package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/live"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// StatusOptions are the settings of `pneuma status`.
type StatusOptions struct {
	Run      string
	Watch    bool
	JSON     bool
	StateDir string
}

const statusLong = `Show a run as pneuma run's live view shows it: the finished jobs, what each
running job is doing, and the totals. The run may be finished or still running in
another process (another terminal, CI, nohup, pneuma serve): status only reads its
run directory (events.jsonl; the journal of runs from earlier releases) and never
touches the run. --watch follows the run until it ends, then leaves every job's
final line and the run's totals. Ctrl-C stops watching and leaves the run alone.

RUN is a run id, found in the current repository's .pneuma/runs or a server's
state directory (--state-dir, default .pneuma/serve), or a run directory's path.
Without RUN, the latest run of the current repository.`

// NewCmdStatus builds `pneuma status`.
func NewCmdStatus(io *IO) *cobra.Command {
	o := &StatusOptions{}
	c := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Show a run, finished or running, from anywhere on this machine",
		Long:  statusLong,
		Example: `  pneuma status
  pneuma status --watch 20261122-134501-3fa9
  pneuma status --json --state-dir /var/lib/pneuma 20261122-134501-3fa9`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Run = args[0]
			}
			return runStatus(c.Context(), io, o)
		},
	}
	f := c.Flags()
	f.BoolVarP(&o.Watch, "watch", "w", false, "follow the run until it ends (Ctrl-C stops watching, not the run)")
	f.BoolVar(&o.JSON, "json", false, "print the run's state once as JSON")
	f.StringVar(&o.StateDir, "state-dir", "", "a server's state directory to look for RUN in")
	return c
}

func runStatus(ctx context.Context, io *IO, o *StatusOptions) error {
	dir, err := findRun(ctx, o.Run, o.StateDir)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	st, src, err := loadRunState(dir)
	if err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	switch {
	case o.JSON:
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	case o.Watch && io.IsTTY:
		setStopNotice(ctx, "", "") // watchStatus says it once its view is erased
		return watchStatus(ctx, io, dir, st, src)
	case o.Watch:
		setStopNotice(ctx, "stopped watching; the run goes on", "stopped watching; the run goes on")
	}
	printStatus(io, dir, st)
	if !o.Watch {
		return nil
	}
	return followStatusLines(ctx, io, dir, st, src)
}

// loadRunState reads a run directory: its events.jsonl, else (a run of
// an earlier release) its journal; the report fills in a cut-short log.
func loadRunState(dir runner.RunDir) (*live.State, *live.Source, error) {
	var st *live.State
	var src *live.Source
	j, jerr := runner.ReadJournal(string(dir))
	if _, err := os.Stat(dir.Events()); err == nil {
		st, src = live.NewState(), live.NewSource(dir.Events())
		if _, err := src.Read(st); err != nil {
			return nil, nil, err
		}
		if jerr == nil && j.Plan != nil {
			st.BudgetUSD = j.Plan.BudgetUSD
		}
	} else {
		if jerr != nil {
			return nil, nil, fmt.Errorf("read run %s: %w", dir, jerr)
		}
		st = live.FromJournal(&j.JournalData)
	}
	if data, err := os.ReadFile(dir.Report()); err == nil {
		var r report.Report
		if json.Unmarshal(data, &r) == nil {
			st.FromReport(&r)
		}
	}
	return st, src, nil
}

// printStatus prints the state once, as lines without terminal codes.
func printStatus(io *IO, dir runner.RunDir, st *live.State) {
	now := time.Now()
	style := live.Style{Width: 0}
	if io.IsTTY {
		cols, _ := termSizeOf(io)
		style = live.Style{Width: cols, Color: io.Getenv("NO_COLOR") == ""}
	}
	fmt.Fprintf(io.Out, "run %s · %s\n", runIDOf(dir, st), dir)
	for _, j := range st.Done {
		fmt.Fprintln(io.Out, live.FinishedLine(j, style))
	}
	for _, l := range st.RunningLines(now, len(st.Running)+1, style) {
		fmt.Fprintln(io.Out, l)
	}
	fmt.Fprintln(io.Out, st.Footer(now, style))
}

// followStatusLines is --watch without a terminal: each finished job's
// line as it finishes, until the run ends.
func followStatusLines(ctx context.Context, io *IO, dir runner.RunDir, st *live.State, src *live.Source) error {
	printed := len(st.Done)
	for !st.Ended && src != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(statusPoll):
		}
		if _, err := src.Read(st); err != nil {
			return err
		}
		for ; printed < len(st.Done); printed++ {
			fmt.Fprintln(io.Out, live.FinishedLine(st.Done[printed], live.Style{}))
		}
	}
	fmt.Fprintln(io.Out, st.Footer(time.Now(), live.Style{}))
	return nil
}

// statusPoll is how often --watch and logs -f look for new lines.
const statusPoll = 200 * time.Millisecond

// watchStatus draws the live view of a run another process runs, until it
// ends or Ctrl-C. The finished jobs' lines stay; at the end the footer
// follows them, the run's final totals, or after Ctrl-C a line saying the
// run goes on.
func watchStatus(ctx context.Context, io *IO, dir runner.RunDir, st *live.State, src *live.Source) error {
	fmt.Fprintf(io.ErrOut, "run %s · %s\n", runIDOf(dir, st), dir)
	v := newLiveViewOf(io.ErrOut, io.TermSize, io.Getenv("NO_COLOR") == "", st, liveRedraws)
	err := followView(ctx, v, src)
	v.Close()
	if ctx.Err() != nil {
		fmt.Fprintf(io.ErrOut, "pneuma: stopped watching; run %s goes on\n", runIDOf(dir, st))
		return nil
	}
	cols, _ := termSizeOf(io)
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintln(io.ErrOut, st.Footer(time.Now(), live.Style{Width: cols}))
	return err
}

// followView feeds v what src has new until the run ends or ctx does.
func followView(ctx context.Context, v *liveView, src *live.Source) error {
	for !v.ended() && src != nil {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(statusPoll):
		}
		if err := v.feed(src); err != nil {
			return err
		}
	}
	return nil
}

func runIDOf(dir runner.RunDir, st *live.State) string {
	if st.RunID != "" {
		return st.RunID
	}
	return baseName(string(dir))
}

func baseName(p string) string { return filepath.Base(p) }

// termSizeOf is ErrOut's terminal size (80×24 when unknown).
func termSizeOf(io *IO) (int, int) {
	if io.TermSize != nil {
		if c, r, err := io.TermSize(); err == nil && c > 0 {
			return c, r
		}
	}
	return 80, 24
}
