package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/schollz/progressbar/v3"

	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// reporter is a runner.Reporter that can be flushed at the end of a run.
type reporter interface {
	runner.Reporter
	Close()
}

// newReporter picks the progress output: JSON events on stdout (--json),
// nothing (--quiet), one bar on a terminal, or plain lines (CI).
func newReporter(io *IO, o *RunOptions, github bool) reporter {
	switch {
	case o.JSON:
		return &jsonReporter{w: io.Out}
	case o.Quiet:
		return nopReporter{}
	case io.IsTTY:
		return newBarReporter(io.ErrOut, 100*time.Millisecond)
	}
	return &lineReporter{w: io.ErrOut, github: github}
}

type nopReporter struct{}

func (nopReporter) Event(runner.Event) {}
func (nopReporter) Close()             {}

// jsonReporter writes one JSON object per event (--json).
type jsonReporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *jsonReporter) Event(e runner.Event) {
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A reader that went away (closed pipe) must not stop the run; the
	// report and the run's files still hold every event.
	_, _ = r.w.Write(append(data, '\n'))
}

func (r *jsonReporter) Close() {}

// lineReporter prints a plain line per job start and finish and per API
// retry: readable in CI logs, no terminal control codes.
type lineReporter struct {
	mu     sync.Mutex
	w      io.Writer
	github bool
	total  int
	done   int
	token  string
}

func (r *lineReporter) Event(e runner.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ts := e.Time.Format("15:04:05")
	switch e.Type {
	case runner.EventRunStarted:
		r.total = e.Jobs
		fmt.Fprintf(r.w, "%s run %s: %d jobs\n", ts, e.RunID, e.Jobs)
	case runner.EventJobStarted:
		where := e.Branch
		if where == "" {
			where = e.Worktree
		}
		fmt.Fprintf(r.w, "%s start  %s (%s)\n", ts, e.Job, where)
	case runner.EventAPIRetry:
		status := "network"
		if e.ErrorStatus != nil {
			status = fmt.Sprint(*e.ErrorStatus)
		}
		fmt.Fprintf(r.w, "%s retry  %s: API error %s (%s), CLI retry %d in %s\n", ts, e.Job, status, e.Reason, e.Attempt, time.Duration(e.DelayMS)*time.Millisecond)
	case runner.EventJobRetry:
		fmt.Fprintf(r.w, "%s again  %s: attempt %d after %s, in %s\n", ts, e.Job, e.Attempt, e.Reason, (time.Duration(e.DelayMS) * time.Millisecond).Round(time.Millisecond))
	case runner.EventJobFinished:
		r.done++
		j := e.Result
		if j == nil {
			return
		}
		status := j.Status
		if j.Reason != "" {
			status += " (" + j.Reason + ")"
		}
		fmt.Fprintf(r.w, "%s %-6s %s: %s · $%.4f · %d turns · %s · %d files [%d/%d, $%.4f spent]\n",
			ts, "done", j.Name, status, j.CostUSD, j.NumTurns, (time.Duration(j.DurationMS) * time.Millisecond).Round(100*time.Millisecond), j.FilesChanged, r.done, r.total, e.SpentUSD)
		if j.Error != "" && j.Status != report.StatusSucceeded {
			r.echo(fmt.Sprintf("         %s: %s\n", j.Name, text.Shorten(j.Error, 400)))
		}
		if line := tasksLeft(j); line != "" {
			r.echo(fmt.Sprintf("         %s: %s\n", j.Name, line))
		}
	case runner.EventCompactBoundary, runner.EventModelFallback, runner.EventWritesLost:
		r.echo(fmt.Sprintf("%s note   %s: %s\n", ts, e.Job, text.Shorten(e.Message, 400)))
	}
}

// printable drops the control characters of s, which the model wrote:
// none reaches the terminal.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// tasksLeft says which background tasks a job left running at its result,
// "" when none.
func tasksLeft(j *report.Job) string {
	if len(j.TasksRunning) == 0 {
		return ""
	}
	names := make([]string, len(j.TasksRunning))
	for i, t := range j.TasksRunning {
		names[i] = printable(t.ID)
		if t.Description != "" {
			names[i] += " (" + text.Shorten(printable(t.Description), 80) + ")"
		}
	}
	return fmt.Sprintf("%d background task(s) still running at the result: %s", len(names), strings.Join(names, ", "))
}

// echo prints text that may come from the model or the CLI. In GitHub
// Actions it is wrapped in stop-commands so that a line starting with "::"
// cannot run a workflow command.
func (r *lineReporter) echo(s string) {
	if !r.github {
		fmt.Fprint(r.w, s)
		return
	}
	if r.token == "" {
		r.token = report.NewStopToken()
	}
	// Progress output: a failed write to it must not stop the run (the
	// report holds the same).
	_ = report.StopCommands(r.w, r.token, func(w io.Writer) error {
		_, err := io.WriteString(w, s)
		return err
	})
}

func (r *lineReporter) Close() {}

// barReporter draws one progress bar on a terminal: jobs done of total, the
// jobs running, and the spend so far.
type barReporter struct {
	mu       sync.Mutex
	w        io.Writer
	bar      *progressbar.ProgressBar
	running  map[string]bool
	spent    float64
	stop     chan struct{} // ends the ticker that keeps the elapsed time moving
	throttle time.Duration
	done     chan struct{}
}

// plainWriter hides the *os.File from progressbar, which fsyncs every redraw
// when its writer is a file (STYLE.md, practice 12).
type plainWriter struct{ w io.Writer }

func (p plainWriter) Write(b []byte) (int, error) { return p.w.Write(b) }

// newBarReporter draws at most one frame per throttle.
func newBarReporter(w io.Writer, throttle time.Duration) *barReporter {
	return &barReporter{w: w, running: map[string]bool{}, throttle: throttle}
}

func (r *barReporter) Event(e runner.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.SpentUSD > r.spent {
		r.spent = e.SpentUSD
	}
	switch e.Type {
	case runner.EventRunStarted:
		r.bar = progressbar.NewOptions(e.Jobs,
			progressbar.OptionSetWriter(plainWriter{r.w}),
			progressbar.OptionSetWidth(24),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionThrottle(r.throttle),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetDescription("starting"),
		)
		r.stop, r.done = make(chan struct{}), make(chan struct{})
		go r.tick()
	case runner.EventJobStarted:
		r.running[e.Job] = true
	case runner.EventJobFinished:
		delete(r.running, e.Job)
		if r.bar != nil {
			_ = r.bar.Add(1) // errors only from writing to the terminal: cosmetic
		}
		if j := e.Result; j != nil && j.Status != report.StatusSucceeded && r.bar != nil {
			_ = r.bar.Clear()
			fmt.Fprintf(r.w, "%s: %s %s\n", j.Name, j.Status, j.Reason)
		}
		if j := e.Result; j != nil && r.bar != nil {
			if line := tasksLeft(j); line != "" {
				_ = r.bar.Clear()
				fmt.Fprintf(r.w, "%s: %s\n", j.Name, line)
			}
		}
	}
	r.describe()
}

// describe redraws the bar; the caller holds mu.
func (r *barReporter) describe() {
	if r.bar != nil {
		r.bar.Describe(fmt.Sprintf("%d running · $%.2f", len(r.running), r.spent))
	}
}

// tick redraws the bar every second so that its clock moves while jobs run.
func (r *barReporter) tick() {
	defer close(r.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mu.Lock()
			r.describe()
			r.mu.Unlock()
		}
	}
}

func (r *barReporter) Close() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		// Errors only from writing to the terminal: cosmetic.
		_ = r.bar.Finish()
		_ = r.bar.Clear()
	}
}
