package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

func intp(n int) *int { return &n }

func TestClassify(t *testing.T) {
	ok := &claude.Result{Subtype: "success"}
	apiErr := &claude.Result{Subtype: "success", IsError: true, Result: "API Error: 500 Internal server error", APIErrorStatus: intp(500)}
	// The CLI's result once the model refused twice (2.1.197 and 2.1.332).
	refusal := &claude.Result{Subtype: "success", IsError: true, StopReason: claude.StopRefusal,
		Result: "API Error: Opus 5.5's safeguards flagged this message (https://www.anthropic.com/legal/aup)."}
	passed := []report.VerifyRound{{Round: 1, Command: []string{"go", "test"}, Passed: true}}
	failedRound := []report.VerifyRound{{Round: 1, Command: []string{"go", "test"}, ExitCode: 1}, {Round: 2, Command: []string{"go", "test"}, ExitCode: 1}}
	verify := &jobfile.Verify{Command: []string{"go", "test"}}
	tests := []struct {
		name    string
		o       outcome
		status  string
		reason  string
		errLike string
	}{
		{"success of the last prompt", outcome{last: ok, results: 2, prompts: 2}, report.StatusSucceeded, "", ""},
		{"exit 0 without a result proves nothing", outcome{exit: claude.ExitStatus{Code: 0}}, report.StatusFailed, report.ReasonNoResult, "exited (exit code 0) without a result"},
		{"no result, invalid lines counted", outcome{invalid: 3, exit: claude.ExitStatus{Code: -1, Signal: "SIGKILL"}}, report.StatusFailed, report.ReasonNoResult, "(killed by SIGKILL) without a result; 3 stdout lines were not JSON"},
		{"timeout", outcome{stopped: report.ReasonTimeout, timeout: time.Minute}, report.StatusFailed, report.ReasonTimeout, "the job's timeout (1m0s)"},
		{"idle timeout", outcome{last: ok, results: 1, prompts: 2, stopped: report.ReasonIdleTimeout, idleTimeout: time.Second}, report.StatusFailed, report.ReasonIdleTimeout, "idle_timeout (1s)"},
		{"mcp failed", outcome{stopped: report.ReasonMCPFailed, mcp: []claude.MCPServer{{Name: "gh", Status: "failed", Error: "ENOENT"}, {Name: "ok", Status: "connected"}}},
			report.StatusFailed, report.ReasonMCPFailed, "MCP servers did not start: gh (failed: ENOENT)"},
		{"interrupted", outcome{stopped: report.ReasonInterrupted}, report.StatusInterrupted, report.ReasonInterrupted, ""},
		{"fail fast", outcome{stopped: report.ReasonFailFast}, report.StatusInterrupted, report.ReasonFailFast, ""},
		{"a result wins over a linger stop", outcome{last: ok, results: 1, prompts: 1, stopped: "linger"}, report.StatusSucceeded, "", ""},
		{"max turns", outcome{last: &claude.Result{Subtype: "error_max_turns", IsError: true, Errors: []string{"Reached maximum number of turns (2)"}}, results: 1, prompts: 1}, report.StatusFailed, report.ReasonMaxTurns, "Reached maximum number of turns"},
		{"max budget", outcome{last: &claude.Result{Subtype: "error_max_budget_usd", IsError: true}, results: 1, prompts: 1}, report.StatusFailed, report.ReasonMaxBudget, "error_max_budget_usd"},
		{"the CLI gave up on structured output", outcome{last: &claude.Result{Subtype: "error_max_structured_output_retries", IsError: true, Errors: []string{"Failed to provide valid structured output after 5 attempts"}},
			results: 1, prompts: 1, outputRejected: "Output does not match required schema: /n: must be integer"},
			report.StatusFailed, report.ReasonInvalidOutput, "after 5 attempts; the last was refused: Output does not match required schema: /n: must be integer"},
		{"api error is subtype success + is_error", outcome{last: apiErr, results: 1, prompts: 1}, report.StatusFailed, report.ReasonAPIError, "API Error: 500"},
		{"a refusal is its own reason, not an API error", outcome{last: refusal, results: 1, prompts: 1}, report.StatusFailed, report.ReasonRefusal,
			"the model refused (stop_reason refusal; not retried); API Error: Opus 5.5's safeguards flagged this message"},
		{"cli error", outcome{last: &claude.Result{Subtype: "error_during_execution", IsError: true, Errors: []string{"No conversation found"}}, results: 1, prompts: 1}, report.StatusFailed, report.ReasonCLIError, "No conversation found"},
		{"stopped early after 1 of 2 prompts", outcome{last: ok, results: 1, prompts: 2, exit: claude.ExitStatus{Code: 0}}, report.StatusFailed, report.ReasonNoResult, "after 1 of 2 prompts"},
		{"verify passed", outcome{last: ok, results: 1, prompts: 1, final: true, verify: verify, rounds: passed}, report.StatusSucceeded, "", ""},
		{"verify failed after its rounds", outcome{last: ok, results: 1, prompts: 1, final: true, verify: verify, rounds: failedRound}, report.StatusFailed, report.ReasonVerifyFailed, "still failed after 2 round(s) (exit code 1)"},
		{"a stop during verification is classified by its reason", outcome{last: ok, results: 1, prompts: 1, verify: verify, rounds: failedRound[:1], stopped: report.ReasonTimeout}, report.StatusFailed, report.ReasonTimeout, "timeout"},
		{"verify never ran", outcome{last: ok, results: 1, prompts: 1, final: true, verify: verify}, report.StatusFailed, report.ReasonNoResult, "after 1 of 1 prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := classify(tt.o)
			if v.status != tt.status || v.reason != tt.reason {
				t.Fatalf("classify = %s/%s (%q), want %s/%s", v.status, v.reason, v.err, tt.status, tt.reason)
			}
			if !strings.Contains(v.err, tt.errLike) {
				t.Fatalf("error %q does not contain %q", v.err, tt.errLike)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		reason string
		status *int
		want   bool
	}{
		{report.ReasonNoResult, nil, true},
		{report.ReasonIdleTimeout, nil, true},
		{report.ReasonAPIError, nil, true}, // 529 overloaded has no status
		{report.ReasonAPIError, intp(500), true},
		{report.ReasonAPIError, intp(529), true},
		{report.ReasonAPIError, intp(429), true},
		{report.ReasonAPIError, intp(401), false},
		{report.ReasonAPIError, intp(400), false},
		{report.ReasonTimeout, nil, false},
		{report.ReasonMaxTurns, nil, false},
		{report.ReasonMaxBudget, nil, false},
		{report.ReasonCLIError, nil, false},
		{report.ReasonVerifyFailed, nil, false},
		{report.ReasonInterrupted, nil, false},
		{report.ReasonBudget, nil, false},
		{report.ReasonWorkspace, nil, false},
		{report.ReasonRefusal, nil, false}, // no api_error_status, like a 529
	}
	for _, tt := range tests {
		if got := retryable(tt.reason, tt.status); got != tt.want {
			t.Errorf("retryable(%s, %v) = %v, want %v", tt.reason, fmtStatus(tt.status), got, tt.want)
		}
	}
}

// A refusal whose text happens to hold "529" (a request ID) is no overload
// answer: it must not halve the run's concurrency.
func TestOverloadAnswerNotARefusal(t *testing.T) {
	res := &claude.Result{Subtype: "success", IsError: true, StopReason: claude.StopRefusal, Result: "API Error: safeguards flagged this message. Request ID: req_529"}
	a := attempt{verdict: classify(outcome{last: res, results: 1, prompts: 1}), result: res}
	if overloadAnswer(a) {
		t.Errorf("a refusal (%s) counted as an overload answer", a.reason)
	}
}

func TestBackoff(t *testing.T) {
	none := func(n int64) int64 { return n / 2 } // the middle: no jitter
	low := func(int64) int64 { return 0 }        // -25%
	high := func(n int64) int64 { return n - 1 } // +25%
	tests := []struct {
		base   time.Duration
		n      int
		jitter func(int64) int64
		want   time.Duration
	}{
		{time.Second, 1, none, time.Second},
		{time.Second, 2, none, 2 * time.Second},
		{time.Second, 4, none, 8 * time.Second},
		{time.Second, 1, low, 750 * time.Millisecond},
		{time.Second, 1, high, 1250*time.Millisecond - time.Nanosecond + time.Nanosecond/2},
		{time.Second, 30, none, maxBackoff},           // capped
		{10 * time.Minute, 1, none, maxBackoff},       // a base over the cap
		{time.Second, 0, none, time.Second},           // never below the base
		{time.Duration(1) << 62, 3, none, maxBackoff}, // overflow
	}
	for _, tt := range tests {
		got := backoff(tt.base, tt.n, tt.jitter)
		if d := got - tt.want; d < -time.Nanosecond || d > time.Nanosecond {
			t.Errorf("backoff(%v, %d) = %v, want %v", tt.base, tt.n, got, tt.want)
		}
	}
	for range 100 {
		if d := backoff(time.Second, 1, randomJitter); d < 750*time.Millisecond || d > 1250*time.Millisecond {
			t.Fatalf("random jitter out of ±25%%: %v", d)
		}
	}
}

func fmtStatus(s *int) any {
	if s == nil {
		return "no status"
	}
	return *s
}

func TestResumeRejected(t *testing.T) {
	tests := []struct {
		name            string
		initSeen        bool
		stopped, status string
		want            bool
	}{
		{"error result before init", false, "", report.StatusFailed, true},
		{"exit before init", false, "", report.StatusFailed, true},
		{"failed after init", true, "", report.StatusFailed, false},
		{"stopped by pneuma before init", false, report.ReasonTimeout, report.StatusFailed, false},
		{"interrupted before init", false, report.ReasonInterrupted, report.StatusInterrupted, false},
		{"succeeded", true, "", report.StatusSucceeded, false},
	}
	for _, tt := range tests {
		if got := resumeRejected(tt.initSeen, tt.stopped, tt.status); got != tt.want {
			t.Errorf("%s: resumeRejected = %v, want %v", tt.name, got, tt.want)
		}
	}
}
