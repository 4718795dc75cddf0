package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// DefaultMaxWait is limits.max_wait when the jobs file sets none.
const DefaultMaxWait = 6 * time.Hour

// Limits are a plan's usage-limit settings, defaults applied.
type Limits struct {
	Wait               bool          `json:"wait"`
	MaxWait            time.Duration `json:"max_wait"`
	ReserveUtilization float64       `json:"reserve_utilization,omitempty"`
}

// limits applies the defaults to a limits: block.
func limitsOf(s jobfile.Limits) Limits {
	l := Limits{Wait: s.Wait == nil || *s.Wait, MaxWait: s.MaxWait.Std(), ReserveUtilization: s.ReserveUtilization}
	if l.MaxWait <= 0 {
		l.MaxWait = DefaultMaxWait
	}
	return l
}

// usageLimit returns the reset of a usage limit that stopped an attempt:
// the CLI's rate_limit_event said rejected, and the attempt failed on the
// API's 429. ok is false for any other outcome.
func usageLimit(v verdict, rl *claude.RateLimitInfo, res *claude.Result) (reset time.Time, ok bool) {
	if v.status == report.StatusSucceeded || rl == nil || rl.Status != claude.RateLimitRejected {
		return time.Time{}, false
	}
	if res != nil && res.APIErrorStatus != nil && *res.APIErrorStatus != 429 {
		return time.Time{}, false
	}
	if rl.ResetsAt <= 0 {
		return time.Time{}, true
	}
	return time.Unix(rl.ResetsAt, 0), true
}

// holdFor decides how long a run waits for a usage limit's reset: the time
// until reset (zero when it has passed), or ok false when it may not wait
// (waiting is off, the reset is unknown, or it is beyond maxWait).
func holdFor(l Limits, now, reset time.Time) (time.Duration, bool) {
	if !l.Wait || reset.IsZero() {
		return 0, false
	}
	d := max(reset.Sub(now), 0)
	return d, d <= l.MaxWait
}

// pastReserve reports whether a reported utilization leaves less than the
// quota kept for people.
func pastReserve(l Limits, rl *claude.RateLimitInfo) bool {
	return l.ReserveUtilization > 0 && rl != nil && rl.Utilization != nil && *rl.Utilization >= l.ReserveUtilization
}

// reportRateLimit turns the CLI's rate-limit state into the report's.
func reportRateLimit(rl *claude.RateLimitInfo) *report.RateLimit {
	if rl == nil {
		return nil
	}
	out := &report.RateLimit{Status: rl.Status, Type: rl.Type, Utilization: rl.Utilization}
	if rl.ResetsAt > 0 {
		out.ResetsAt = time.Unix(rl.ResetsAt, 0).UTC()
	}
	return out
}

// waitLine is the line a run prints when it waits for a usage limit.
func waitLine(now, reset time.Time, held int) string {
	d := reset.Sub(now).Round(time.Second)
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("usage limit reached; waiting until %s (%s) to resume %d %s",
		reset.Local().Format("15:04"), shortDuration(d), held, plural(held, "job", "jobs"))
}

// shortDuration writes 3h12m, 12m5s or 40s.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxHolds bounds how often one job waits for a usage limit's reset.
const maxHolds = 3

// noteRateLimit keeps the latest rate-limit state of the run, and stops new
// jobs once utilization is past limits.reserve_utilization.
func (r *run) noteRateLimit(job string, rl *claude.RateLimitInfo) {
	r.mu.Lock()
	r.rateLimit = rl
	r.mu.Unlock()
	if pastReserve(r.plan.Limits, rl) && !r.gate.isReserved() {
		why := fmt.Sprintf("utilization %.0f%% of the %s limit is past limits.reserve_utilization %.0f%%",
			*rl.Utilization*100, firstNonEmpty(rl.Type, "usage"), r.plan.Limits.ReserveUtilization*100)
		r.mu.Lock()
		r.heldWhy = firstNonEmpty(r.heldWhy, why)
		r.warnings = append(r.warnings, report.Warning{Code: report.WarnUsageReserve,
			Message: why + ": no job started after it (the rest of the quota is kept for people)"})
		r.mu.Unlock()
		r.gate.reserve()
		r.event(Event{Type: EventUsageReserve, Job: job, Message: why + ": no new job starts"})
	}
}

func (r *run) latestRateLimit() *claude.RateLimitInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rateLimit
}

// holdForLimit is what a run does when a job stopped on a usage limit: it
// holds every start until the reset, says so once, and reports true when
// the job may try again after it (false: the run may not wait that long).
func (r *run) holdForLimit(ctx context.Context, job *Job, reset time.Time) bool {
	now := time.Now()
	if _, ok := holdFor(r.plan.Limits, now, reset); !ok {
		r.mu.Lock()
		r.heldWhy = firstNonEmpty(r.heldWhy, "the account's usage limit is reached and "+noWait(r.plan.Limits, reset))
		r.mu.Unlock()
		if r.client == nil { // a server's gate stays open for its other sessions
			r.gate.close()
		}
		return false
	}
	if r.gate.hold(reset) {
		r.newWave()
		at := reset
		r.event(Event{Type: EventUsageLimitWait, Job: job.Name, ResumeAt: &at, Message: waitLine(now, reset, r.unfinished())})
	}
	return ctx.Err() == nil
}

// unfinished counts the plan's jobs that have not finished.
func (r *run) unfinished() int {
	n := 0
	for _, j := range r.plan.Jobs {
		if st := r.journal.state(j.Name); st == nil || st.State != StateFinished {
			n++
		}
	}
	return n
}

// admit waits while a usage limit holds the run, before a new job takes a
// workspace. It returns errHeld when the job must not start at all.
func (r *run) admit(ctx context.Context) error {
	if err := r.gate.acquire(ctx, true); err != nil {
		return err
	}
	r.gate.release()
	return nil
}

// heldError is the error of a job that a usage limit kept from starting.
func (r *run) heldError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "not started: " + firstNonEmpty(r.heldWhy, "the account's usage limit is reached")
}

// noWait says why a run may not wait for a usage limit's reset.
func noWait(l Limits, reset time.Time) string {
	switch {
	case !l.Wait:
		return "limits.wait is off"
	case reset.IsZero():
		return "the CLI gave no reset time"
	}
	return fmt.Sprintf("it resets at %s, beyond limits.max_wait (%s)", reset.UTC().Format(time.RFC3339), l.MaxWait)
}
