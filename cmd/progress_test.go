package cmd

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// syncBuffer is a bytes.Buffer safe for the bar's ticker goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBarReporter(t *testing.T) {
	var out syncBuffer
	r := newBarReporter(&out, 0)
	now := time.Now()
	r.Event(runner.Event{Type: runner.EventRunStarted, Time: now, Jobs: 2})
	r.Event(runner.Event{Type: runner.EventJobStarted, Time: now, Job: "a"})
	r.Event(runner.Event{Type: runner.EventJobStarted, Time: now, Job: "b"})
	r.Event(runner.Event{Type: runner.EventJobFinished, Time: now, Job: "a", SpentUSD: 0.25, Result: &report.Job{Name: "a", Status: report.StatusSucceeded}})
	if got := out.String(); !strings.Contains(got, "1 running · $0.25") || !strings.Contains(got, "(1/2)") {
		t.Errorf("bar does not show progress: %q", got)
	}
	r.Event(runner.Event{Type: runner.EventJobFinished, Time: now, Job: "b", Result: &report.Job{Name: "b", Status: report.StatusFailed, Reason: report.ReasonMaxTurns}})
	if got := out.String(); !strings.Contains(got, "b: failed max_turns") {
		t.Errorf("a failed job is not printed above the bar: %q", got)
	}
	r.Close() // must stop the ticker goroutine (it waits for it); -race checks its writes
}

func TestLineReporterGuardsModelText(t *testing.T) {
	var out bytes.Buffer
	r := &lineReporter{w: &out, github: true}
	r.Event(runner.Event{Type: runner.EventJobFinished, Time: time.Now(), Job: "x", Result: &report.Job{
		Name: "x", Status: report.StatusFailed, Reason: report.ReasonAPIError, Error: "::error::pwned\nmore",
	}})
	lines := strings.Split(out.String(), "\n")
	var guarded bool
	for _, l := range lines {
		if strings.HasPrefix(l, "::stop-commands::") {
			guarded = true
		}
		if strings.HasPrefix(strings.TrimSpace(l), "::error::pwned") && !guarded {
			t.Errorf("model text can run a workflow command: %q", out.String())
		}
	}
	if !guarded {
		t.Errorf("no stop-commands fence: %q", out.String())
	}
}

// TestLineReporterTasksLeftRunning: pneuma run says which background tasks
// a job left running at its result, without the model's control characters.
func TestLineReporterTasksLeftRunning(t *testing.T) {
	var out bytes.Buffer
	r := &lineReporter{w: &out}
	r.Event(runner.Event{Type: runner.EventCompactBoundary, Time: time.Now(), Job: "x", Message: "the conversation was compacted (auto) from 150000 tokens"})
	r.Event(runner.Event{Type: runner.EventJobFinished, Time: time.Now(), Job: "x", Result: &report.Job{
		Name: "x", Status: report.StatusSucceeded, TasksRunning: []report.Task{{ID: "b1", Description: "dev\x1b[2Jserver"}},
	}})
	got := out.String()
	if !strings.Contains(got, "x: 1 background task(s) still running at the result: b1 (dev [2Jserver)") {
		t.Errorf("no tasks-left line: %q", got)
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("a control character reached the terminal: %q", got)
	}
	if !strings.Contains(got, "note   x: the conversation was compacted") {
		t.Errorf("no compaction line: %q", got)
	}
}
