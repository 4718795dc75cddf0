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
