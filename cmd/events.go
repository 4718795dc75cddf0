package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	stdio "io"
	"os"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// runEventTypes are fsync'd once they are in a run's events.jsonl: the
// ends of jobs and of the run (as serve's logs do), within runSyncLag of
// their append, one fsync for all of them in that time.
func runEventTypes(typ string) bool {
	return typ == runner.EventJobFinished || typ == runner.EventRunFinished
}

// runSyncLag is how long a job's end may wait in the kernel for the disk: a
// crash of the machine may lose the ends of jobs of the last runSyncLag from
// events.jsonl (the journal, which --resume reads, is not fsync'd line by
// line either); a killed pneuma loses nothing. An fsync per result was 5-7%
// of pneuma's own CPU at 1,000 jobs (issue 27).
const runSyncLag = 200 * time.Millisecond

// recorder is the Observer of `pneuma run`: every event of the run, the
// fine ones included, goes to the run directory's events.jsonl with its
// seq (the same log serve keeps), then to next (the live view, telemetry).
type recorder struct {
	mu   sync.Mutex
	log  *eventlog.Log
	next []runner.Reporter
	// lines, when set, writes --json: the events a Reporter gets (not the
	// fine ones), each in the log's own encoding of it (one json.Marshal an
	// event, not two: issue 27).
	lines *jsonReporter
	err   error
}

// openRecorder opens (or continues, on --resume) the run's events.jsonl.
// A damaged log (not a torn last line: eventlog drops that) is kept beside
// as events.jsonl.damaged and a new one begins, so that a run can always
// be resumed; warn hears of it.
func openRecorder(path string, warn stdio.Writer, next ...runner.Reporter) (*recorder, error) {
	log, err := eventlog.Open(path, runEventTypes)
	var damage *eventlog.DamageError
	if errors.As(err, &damage) {
		aside := path + ".damaged"
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("move the damaged event log aside: %w", rerr)
		}
		fmt.Fprintf(warn, "warning: the run's event log is damaged (%v); kept as %s, a new one begins\n", err, aside)
		log, err = eventlog.Open(path, runEventTypes)
	}
	if err != nil {
		return nil, fmt.Errorf("open the run's event log: %w", err)
	}
	log.SyncWithin(runSyncLag)
	r := &recorder{log: log}
	for _, n := range next {
		if n != nil {
			r.next = append(r.next, n)
		}
	}
	return r, nil
}

func (r *recorder) Event(e runner.Event) {
	logged := e
	if e.Report != nil {
		logged.Report = reportHead(e.Report)
	}
	data, err := json.Marshal(logged)
	r.mu.Lock()
	if err == nil {
		_, err = r.log.Append(e.Type, data)
	}
	if err != nil && r.err == nil {
		r.err = err // the run goes on; Close reports it once
	}
	if r.lines != nil && !runner.IsFine(e.Type) {
		if e.Report != nil || data == nil {
			r.lines.Event(e) // with every job of the report, streamed
		} else {
			r.lines.encoded(data)
		}
	}
	for _, n := range r.next {
		n.Event(e)
	}
	r.mu.Unlock()
}

// reportHead is r without its jobs, as run_finished is logged: a run of
// 10,000 jobs would otherwise be one line of every job (10 MB, encoded
// whole in memory); its jobs are in report.json (issue 27).
func reportHead(r *report.Report) *report.Report {
	head := *r
	head.Jobs = nil // and its source: Streamed sets one that streams no jobs
	return report.Streamed(head, func(func(*report.Job) error) error { return nil })
}

// Close syncs and closes the log; errOut hears of a failed append.
func (r *recorder) Close(errOut stdio.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.log.Close()
	if r.err != nil {
		err = r.err
	}
	if err != nil {
		fmt.Fprintf(errOut, "warning: the run's event log %s is incomplete: %v\n", r.log.Path(), err)
	}
}
