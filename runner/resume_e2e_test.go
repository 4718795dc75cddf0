package runner_test

import (
	"os"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// retryHook runs fn on each job_retry event, before the retry starts.
type retryHook struct {
	eventLog
	fn func(runner.Event)
}

func (h *retryHook) Event(ev runner.Event) {
	h.eventLog.Event(ev)
	if ev.Type == runner.EventJobRetry {
		h.fn(ev)
	}
}

// A retry resumes the failed attempt's session; when its transcript is
// gone the real CLI rejects the resume ("No conversation found"), and the
// job starts afresh with its own prompt instead of failing.
func TestRejectedResumeStartsFresh(t *testing.T) {
	b := newBed(t, claudetest.WithMaxRetries(0))
	repo := claudetest.GitRepo(t)
	calls := 0
	b.jobs["TOKEN-GONE"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		calls++
		if calls == 1 {
			return fakeapi.Error(500, "api_error", "boom").WithHeader("x-should-retry", "false")
		}
		return fakeapi.Text("fresh and done")
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: gone
    prompt: TOKEN-GONE start
    retries: 1
`)
	deleted := 0
	hook := &retryHook{fn: func(ev runner.Event) {
		if ev.Reason != report.ReasonAPIError {
			return
		}
		for _, tr := range claudetest.Transcripts(t, b.env) {
			if err := os.Remove(tr); err != nil {
				t.Error(err)
			}
			deleted++
		}
	}}
	rep := b.runWith(p, runner.Options{Reporter: hook})
	j := rep.Jobs[0]
	if deleted == 0 {
		t.Fatal("no transcript to delete after the first attempt")
	}
	if j.Status != report.StatusSucceeded || len(j.Attempts) != 3 || j.Result != "fresh and done" {
		t.Fatalf("gone: %s/%s %q after %+v", j.Status, j.Reason, j.Result, j.Attempts)
	}
	first, rejected, fresh := j.Attempts[0], j.Attempts[1], j.Attempts[2]
	if first.Reason != report.ReasonAPIError || first.SessionID == "" {
		t.Errorf("first attempt %+v", first)
	}
	if rejected.Status != report.StatusFailed || rejected.Reason != report.ReasonResumeFailed ||
		rejected.SessionID != first.SessionID || !strings.Contains(rejected.Error, "No conversation found") {
		t.Errorf("rejected resume %+v", rejected)
	}
	if fresh.Status != report.StatusSucceeded || fresh.SessionID == "" || fresh.SessionID == first.SessionID || j.SessionID != fresh.SessionID {
		t.Errorf("fresh attempt %+v, job session %q", fresh, j.SessionID)
	}
	// The fresh session got the job's prompt, not the continue prompt.
	reqs := b.api.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.FirstUser().Text(), "TOKEN-GONE start") ||
		strings.Contains(last.LastUser().Text(), "Continue where you left off") {
		t.Errorf("fresh request: first user %q, last user %q", last.FirstUser().Text(), last.LastUser().Text())
	}
	state, err := runner.ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	if s := state.Jobs[0]; s.SessionID != fresh.SessionID {
		t.Errorf("journal keeps session %q, want the fresh %q", s.SessionID, fresh.SessionID)
	}
}
