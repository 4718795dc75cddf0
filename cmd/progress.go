package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode"

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
// nothing (--quiet), or plain lines (CI). On a terminal the live view
// (liveView, an Observer: it reads the fine events too) draws instead.
func newReporter(io *IO, o *RunOptions, github bool) reporter {
	switch {
	case o.JSON:
		return &jsonReporter{w: io.Out}
	case o.Quiet, liveTerminal(io, o):
		return nopReporter{}
	}
	return &limitLines{reporter: &lineReporter{w: io.ErrOut, github: github}, w: io.ErrOut}
}

// liveTerminal says whether `pneuma run` draws its live view.
func liveTerminal(io *IO, o *RunOptions) bool { return io.IsTTY && !o.JSON && !o.Quiet }

// liveRedraws is the live view's throttle: at most 10 frames a second.
const liveRedraws = 100 * time.Millisecond

type nopReporter struct{}

func (nopReporter) Event(runner.Event) {}
func (nopReporter) Close()             {}

// jsonReporter writes one JSON object per event (--json).
type jsonReporter struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *jsonReporter) Event(e runner.Event) {
	if e.Report != nil && e.Report.IsStreamed() {
		r.streamReport(e)
		return
	}
	data, err := json.Marshal(e)
	if err != nil {
		return
	}
	r.encoded(data)
}

// encoded writes an event that data encodes (json.Marshal of it, which is
// not changed).
func (r *jsonReporter) encoded(data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A reader that went away (closed pipe) must not stop the run; the
	// report and the run's files still hold every event.
	_, _ = r.w.Write(append(data[:len(data):len(data)], '\n'))
}

// streamReport writes an event that carries a streamed report (run_finished)
// with the report's jobs encoded one at a time: the same line json.Marshal
// would write (Report is Event's last member), never whole in memory.
func (r *jsonReporter) streamReport(e runner.Event) {
	rep := e.Report
	e.Report = nil
	data, err := json.Marshal(e)
	if err != nil || len(data) < 2 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	bw := bufio.NewWriterSize(r.w, 64<<10)
	_, _ = bw.Write(data[:len(data)-1]) // without its "}"
	_, _ = bw.WriteString(`,"report":`)
	// As in Event: a reader that went away must not stop the run, and a
	// report that cannot be read back ends the line short (report.json
	// and the run's files still hold it).
	_ = report.EncodeTo(bw, rep, false)
	_, _ = bw.WriteString("}\n")
	_ = bw.Flush()
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
	case runner.EventHook:
		if e.Hook != nil && e.Hook.Failed() { // include_hook_events: a failed hook is news, the others are counted
			r.echo(fmt.Sprintf("%s note   %s: %s\n", ts, e.Job, text.Shorten(printable(e.Message), 400)))
		}
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
