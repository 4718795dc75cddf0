package runner

import (
	"context"
	"slices"

	"github.com/pneuma-cli/pneuma/report"
)

// Stage 2 of a job: run the CLI, and again while a failure is retryable and
// retries, money and time are left. A retry resumes the session of the
// failed attempt, so the agent continues instead of starting over. When the
// CLI rejects the resume (its transcript is gone), the job starts a fresh
// session with its own prompts; the rejected attempt is no retry.

// attempts runs the job's attempts, accounts for each in res and the
// journal, and returns the CLI session id they used.
func (r *run) attempts(ctx context.Context, job *Job, rec *records, prior *JobState, res *report.Job) string {
	sessionID, number := "", 0
	if prior != nil {
		sessionID, number = prior.SessionID, len(prior.Attempts)
		res.Attempts = append(res.Attempts, prior.Attempts...)
		res.CostUSD = prior.SpentUSD
	}
	var last attempt
	holds, rejected := 0, 0
	cont := r.client == nil // a session's next CLI waits for its client
	for {
		number++
		if _, ok := r.budgetLeft(); !ok && number > 1 {
			last.reason = report.ReasonBudget
			break
		}
		a := r.attempt(ctx, job, rec, sessionID, cont)
		if a.unstarted && r.client != nil && a.status == "" {
			break // the session ended between turns: its last turn stands
		}
		last, cont = a, r.client == nil
		if last.unstarted {
			break // nothing ran: no attempt to account
		}
		reset, limited := usageLimit(last.verdict, last.rateLimit, last.result)
		if limited {
			last.reason = report.ReasonUsageLimit
		}
		r.observeAttempt(job.Name, number, &last)
		if overloadAnswer(last) {
			r.overloaded()
		}
		if last.reason == report.ReasonResumeFailed {
			r.account(job, res, number, "", last)
			r.event(Event{Type: EventJobRetry, Job: job.Name, Attempt: number + 1, Reason: last.reason})
			sessionID, rejected = "", rejected+1
			continue
		}
		sessionID = firstNonEmpty(last.sessionID, sessionID)
		res.RateLimit = cmpRateLimit(res.RateLimit, last.rateLimit)
		r.account(job, res, number, sessionID, last)
		if limited {
			// The held job continues its session after the reset; the
			// wait is no retry.
			if holds++; holds <= maxHolds && r.holdForLimit(ctx, job, reset) {
				cont = true
				continue
			}
			if ctx.Err() != nil { // stopped while held: continued by --resume
				last.status, last.reason, last.err = report.StatusInterrupted, stopReason(ctx), ""
			}
			break
		}
		if r.client != nil {
			if ctx.Err() != nil {
				break // the session ended
			}
			continue // a session's next message resumes its CLI session
		}
		if !r.retryAfter(ctx, job, number-rejected, last) {
			break
		}
	}
	res.Status, res.Reason, res.Error = last.status, last.reason, last.err
	switch {
	case r.client != nil && last.status == "": // a session closed before its first message
		res.Status = report.StatusSucceeded
	case last.status == "": // budget ran out before a retry could start
		res.Status, res.Reason = report.StatusFailed, report.ReasonBudget
	}
	res.SessionID = sessionID
	res.Model = firstNonEmpty(last.model, res.Model)
	res.ExitCode = last.exit.Code
	if last.result != nil {
		res.Result = last.result.Result
	}
	res.FallbackModel = job.FallbackModel
	last.notices.leftRunning(res)
	r.judge(job, res, last)
	return sessionID
}

// account adds attempt number a to the job's result, the run's spend and
// the journal.
func (r *run) account(job *Job, res *report.Job, number int, sessionID string, a attempt) {
	r.addSpent(a.cost)
	res.CostUSD += a.cost
	res.CostEstimated = res.CostEstimated || a.estimated
	res.Usage.Add(a.usage)
	res.ModelUsage = mergeModelUsage(res.ModelUsage, a.modelUsage)
	res.NumTurns += a.turns
	res.PermissionDenials = append(res.PermissionDenials, a.denials...)
	a.notices.addTo(res)
	res.Verify = append(res.Verify, a.rounds...)
	res.Timings.WaitMS += a.waited.Milliseconds()
	res.Timings.CLIMS += a.cli.Milliseconds()
	res.Attempts = append(res.Attempts, report.Attempt{
		Number: number, Status: a.status, Reason: a.reason, SessionID: a.sessionID,
		CostUSD: a.cost, CostEstimated: a.estimated, DurationMS: a.duration.Milliseconds(),
		ExitCode: a.exit.Code, Error: a.err,
	})
	r.journal.update(job.Name, func(s *JobState) {
		s.Attempt = number
		s.SessionID = sessionID
		s.SpentUSD = res.CostUSD
		s.Attempts = slices.Clone(res.Attempts) // the job goes on writing res.Attempts
	})
	r.journal.touch()
}

// retryAfter decides whether attempt number a is followed by another, and
// waits out the backoff if so. It returns false when the job is done.
func (r *run) retryAfter(ctx context.Context, job *Job, number int, a attempt) bool {
	var apiStatus *int
	if a.result != nil {
		apiStatus = a.result.APIErrorStatus
	}
	if a.status == report.StatusSucceeded || !retryable(a.reason, apiStatus) || number > job.Retries || ctx.Err() != nil {
		return false
	}
	if _, ok := r.budgetLeft(); !ok {
		return false
	}
	delay := backoff(r.opts.RetryBackoff, number, randomJitter)
	r.event(Event{Type: EventJobRetry, Job: job.Name, Attempt: number + 1, Reason: a.reason, DelayMS: delay.Milliseconds()})
	return sleep(ctx, delay)
}

// mergeModelUsage adds one attempt's per-model usage to a job's.
func mergeModelUsage(dst, src map[string]report.ModelUsage) map[string]report.ModelUsage {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]report.ModelUsage{}
	}
	for k, v := range src {
		m := dst[k]
		m.InputTokens += v.InputTokens
		m.OutputTokens += v.OutputTokens
		m.CacheReadInputTokens += v.CacheReadInputTokens
		m.CacheCreationInputTokens += v.CacheCreationInputTokens
		m.CostUSD += v.CostUSD
		dst[k] = m
	}
	return dst
}
