package cmd

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/live"
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

// TestLiveView draws a run with the view's own loop: a failure is printed
// above the region as it happens, in red unless NO_COLOR; the region is
// erased at the end and nothing is left of the running lines.
func TestLiveView(t *testing.T) {
	for _, color := range []bool{true, false} {
		var out syncBuffer
		v := newLiveView(&out, func() (int, int, error) { return 60, 20, nil }, color, 0, 5*time.Millisecond)
		now := time.Now()
		v.Event(runner.Event{Type: runner.EventRunStarted, Time: now, Jobs: 2})
		v.Event(runner.Event{Type: runner.EventJobStarted, Time: now, Job: "a"})
		v.Event(runner.Event{Type: runner.EventJobStarted, Time: now, Job: "b"})
		v.Event(runner.Event{Type: runner.EventToolStarted, Time: now, Job: "a", Tool: &runner.ToolCall{Name: "Bash", ToolUseID: "1", Input: "Bash: make"}})
		v.Event(runner.Event{Type: runner.EventJobFinished, Time: now, Job: "b", Result: &report.Job{Name: "b", Status: report.StatusFailed, Reason: report.ReasonMaxTurns, Error: "too many turns"}})
		waitFor(t, &out, "Bash: make")
		waitFor(t, &out, "✗ b  failed (max_turns)")
		v.Close()
		got := out.String()
		if strings.Contains(got, "\x1b[31m") != color {
			t.Errorf("color %v: red present %v: %q", color, !color, got)
		}
		if !strings.HasSuffix(got, "\x1b[J") {
			t.Errorf("the region is not erased at the end: %q", got[max(0, len(got)-80):])
		}
		for _, l := range strings.Split(got, "\n") {
			if live.Width(stripANSI(l)) > 60+20 { // a line holds at most the width plus cursor codes
				t.Errorf("line wider than the terminal: %q", l)
			}
		}
	}
}

func waitFor(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, func() bool { return strings.Contains(out.String(), s) },
		"the view never drew %q", s)
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

// TestLineReporterFailedHook: pneuma run prints a hook that failed
// (include_hook_events), not the ones that started or succeeded.
func TestLineReporterFailedHook(t *testing.T) {
	var out bytes.Buffer
	r := &lineReporter{w: &out}
	exit := 1
	r.Event(runner.Event{Type: runner.EventHook, Time: time.Now(), Job: "x", Message: "hook PreToolUse:Bash started",
		Hook: &claude.Hook{HookName: "PreToolUse:Bash", Phase: "started"}})
	r.Event(runner.Event{Type: runner.EventHook, Time: time.Now(), Job: "x", Message: "hook PreToolUse:Bash: success (exit 0)",
		Hook: &claude.Hook{HookName: "PreToolUse:Bash", Phase: "response", Outcome: claude.HookSuccess}})
	r.Event(runner.Event{Type: runner.EventHook, Time: time.Now(), Job: "x", Message: "hook PostToolUse:Bash: error (exit 1)",
		Hook: &claude.Hook{HookName: "PostToolUse:Bash", Phase: "response", Outcome: "error", ExitCode: &exit}})
	got := out.String()
	if !strings.Contains(got, "note   x: hook PostToolUse:Bash: error (exit 1)") || strings.Count(got, "\n") != 1 {
		t.Errorf("want the failed hook's line only, got %q", got)
	}
}
