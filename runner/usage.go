package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

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

// overloadAnswer reports whether a failed attempt's answer was a 429 or 529.
func overloadAnswer(a attempt) bool {
	if a.status == report.StatusSucceeded || a.reason == report.ReasonUsageLimit || a.result == nil {
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

// limitOptions plans a job's fallback model and output schema.
func (pl *planner) limitOptions(j *Job, spec jobfile.Job) {
	j.FallbackModel = firstNonEmpty(spec.FallbackModel, pl.o.FallbackModel)
	if j.FallbackModel != "" {
		j.Options.ExtraArgs = append(slices.Clip(j.Options.ExtraArgs), "--fallback-model", j.FallbackModel)
	}
	if spec.OutputSchema == "" {
		return
	}
	data := []byte(spec.OutputSchema)
	if !spec.OutputSchema.Inline() {
		var err error
		if data, err = safefile.Read(resolvePath(pl.fileDir, string(spec.OutputSchema)), pl.o.Roots, safefile.MaxSize); err != nil {
			pl.problem(spec.PosOf("output_schema"), "output_schema %s: %v", spec.OutputSchema, pathErr(err))
			return
		}
	}
	if _, err := compileSchema(data); err != nil {
		pl.problem(spec.PosOf("output_schema"), "output_schema: %v", err)
		return
	}
	j.OutputSchema = data
	j.Options.ExtraArgs = append(slices.Clip(j.Options.ExtraArgs), "--json-schema", string(data))
}

// compileSchema compiles a JSON Schema document.
func compileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("output_schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("output_schema.json")
}
