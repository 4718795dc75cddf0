package runner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// outcome is what one CLI process left behind, as classify needs it: the
// facts, no process and no side effects.
type outcome struct {
	last    *claude.Result // the first final result (nil: none came)
	results int            // results received
	prompts int            // prompts the attempt had to send
	final   bool           // the result that ends the session arrived
	invalid int            // stdout lines that were not JSON
	exit    claude.ExitStatus
	// stopped says why pneuma stopped the process ("" when the CLI ended by
	// itself): a report reason, or "linger" for a hang after the result.
	stopped string
	// mcp are the MCP servers as last reported (init line or mcp_status).
	mcp []claude.MCPServer
	// outputRejected is why the CLI refused the latest structured output.
	outputRejected string
	// verify is the job's verification, nil when it has none; rounds are the
	// rounds that ran.
	verify      *jobfile.Verify
	rounds      []report.VerifyRound
	timeout     time.Duration
	idleTimeout time.Duration
}

// verdict is an attempt's status, reason and error message.
type verdict struct {
	status, reason, err string
}

// classify decides an attempt's verdict from its outcome (docs/claude-cli.md,
// pitfalls 8 and 11: exit code 0 proves nothing; a result with is_error false
// for the last prompt does).
func classify(o outcome) verdict {
	complete := o.last != nil && !o.last.IsError && o.results >= o.prompts
	if complete && o.verify != nil {
		if v, decided := classifyVerify(o); decided {
			return v
		}
		complete = false
	}
	switch {
	case complete:
		return verdict{status: report.StatusSucceeded}
	case o.stopped == report.ReasonTimeout:
		return verdict{report.StatusFailed, o.stopped, fmt.Sprintf("stopped after the job's timeout (%s)", o.timeout)}
	case o.stopped == report.ReasonIdleTimeout:
		return verdict{report.StatusFailed, o.stopped, fmt.Sprintf("stopped after no output for the job's idle_timeout (%s)", o.idleTimeout)}
	case o.stopped == report.ReasonMCPFailed:
		return verdict{report.StatusFailed, o.stopped, "expect: {mcp: true} is set and MCP servers did not start: " + strings.Join(failedMCP(o.mcp), ", ")}
	case o.stopped == report.ReasonInterrupted || o.stopped == report.ReasonFailFast:
		return verdict{status: report.StatusInterrupted, reason: o.stopped}
	case o.last == nil:
		msg := fmt.Sprintf("the CLI exited (%s) without a result", exitText(o.exit))
		if o.invalid > 0 {
			msg += fmt.Sprintf("; %d stdout lines were not JSON", o.invalid)
		}
		return verdict{report.StatusFailed, report.ReasonNoResult, msg}
	}
	return classifyResult(o)
}

// classifyVerify decides a complete attempt of a job with verification:
// only once its loop ended (passed, or out of rounds). A stop in the middle
// is classified by its reason instead (decided false).
func classifyVerify(o outcome) (v verdict, decided bool) {
	n := len(o.rounds)
	switch {
	case n == 0 || !o.final:
		return verdict{}, false
	case o.rounds[n-1].Passed:
		return verdict{status: report.StatusSucceeded}, true
	}
	last := o.rounds[n-1]
	return verdict{report.StatusFailed, report.ReasonVerifyFailed,
		fmt.Sprintf("verification `%s` still failed after %d round(s) (exit code %d)", strings.Join(last.Command, " "), n, last.ExitCode)}, true
}

// classifyResult decides an attempt that ended on a result which is not a
// success of its last prompt.
func classifyResult(o outcome) verdict {
	res := o.last
	v := verdict{status: report.StatusFailed, err: strings.Join(res.Errors, "; ")}
	switch {
	case res.Subtype == "error_max_turns":
		v.reason = report.ReasonMaxTurns
	case res.Subtype == "error_max_budget_usd":
		v.reason = report.ReasonMaxBudget
	case res.Subtype == "error_max_structured_output_retries":
		// The CLI validates the StructuredOutput call against --json-schema
		// itself and gives up after a few refused calls.
		v.reason = report.ReasonInvalidOutput
		v.err = "no valid structured output: " + firstNonEmpty(v.err, res.Subtype)
		if o.outputRejected != "" {
			v.err += "; the last was refused: " + o.outputRejected
		}
	case res.StopReason == claude.StopRefusal:
		// A refusal is an is_error result too (subtype success, no
		// api_error_status): asked again, the model refuses again.
		v.reason = report.ReasonRefusal
		v.err = joinErr("the model refused (stop_reason refusal; not retried)", joinErr(res.Result, v.err))
	case res.Subtype == "success" && res.IsError:
		// API errors are subtype success + is_error (pitfall 8).
		v.reason = report.ReasonAPIError
		v.err = joinErr(res.Result, v.err)
	case !res.IsError:
		// A result that was not the last prompt's: the CLI stopped early.
		v.reason = report.ReasonNoResult
		v.err = fmt.Sprintf("the CLI exited (%s) after %d of %d prompts", exitText(o.exit), o.results, o.prompts)
	default:
		v.reason = report.ReasonCLIError
		if v.err == "" {
			v.err = res.Result
		}
	}
	if v.err == "" {
		v.err = res.Subtype
	}
	return v
}

// retryable reports whether a failed attempt may succeed if tried again
// (never a refusal, nor a limit the job set itself).
// apiStatus is the result's api_error_status (nil: none, as for 529).
func retryable(reason string, apiStatus *int) bool {
	switch reason {
	case report.ReasonNoResult, report.ReasonIdleTimeout:
		return true
	case report.ReasonAPIError:
		if apiStatus == nil {
			return true // 529 overloaded carries no status
		}
		return *apiStatus >= 500 || *apiStatus == 429
	}
	return false
}

// maxBackoff caps the delay before a retry.
const maxBackoff = 5 * time.Minute

// backoff is base·2^(n-1) with ±25% jitter (jitter returns a value in
// [0, n)), capped at maxBackoff before the jitter.
func backoff(base time.Duration, n int, jitter func(n int64) int64) time.Duration {
	d := base << min(max(n-1, 0), 10)
	if d > maxBackoff || d <= 0 {
		d = maxBackoff
	}
	return d + time.Duration(jitter(int64(d)/2+1)) - d/4
}

// randomJitter is backoff's jitter in production.
func randomJitter(n int64) int64 { return rand.Int64N(n) }

// exitText says how a process ended, for error messages.
func exitText(e claude.ExitStatus) string {
	if e.Signal != "" {
		return "killed by " + e.Signal
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// resumeRejected says whether a --resume attempt failed because the CLI
// would not resume its session: it ended by itself, unsuccessfully, before
// its init line (an unknown session gives an error result with "No
// conversation found" and exit 1, docs/claude-cli.md section 1). A
// process pneuma stopped tells nothing about the session.
func resumeRejected(initSeen bool, stopped, status string) bool {
	return !initSeen && stopped == "" && status != report.StatusSucceeded
}

// overloadAnswer reports whether a failed attempt's answer was a 429 or 529.
func overloadAnswer(a attempt) bool {
	if a.status == report.StatusSucceeded || a.reason == report.ReasonUsageLimit || a.reason == report.ReasonRefusal || a.result == nil {
		return false
	}
	if s := a.result.APIErrorStatus; s != nil {
		return *s == 429 || *s == 529
	}
	t := strings.ToLower(a.result.Result)
	return strings.Contains(t, "overloaded") || strings.Contains(t, "529")
}

// overloadRetry reports whether a CLI's api_retry was for a 429 or 529.
func overloadRetry(rt *claude.APIRetry) bool {
	if rt.ErrorStatus != nil {
		return *rt.ErrorStatus == 429 || *rt.ErrorStatus == 529
	}
	return strings.Contains(strings.ToLower(rt.Error), "overloaded")
}
