package telemetry

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// noopTracer makes the spans when only metrics are on: they record nothing.
var noopTracer = noop.NewTracerProvider().Tracer(scope)

// Span names.
const (
	SpanRun     = "pneuma.run"
	SpanJob     = "pneuma.job"
	SpanAttempt = "pneuma.attempt"
	SpanTurn    = "pneuma.turn"
	// SpanTool is the GenAI name of a tool call's span, before the tool's name.
	SpanTool = "execute_tool"
)

// Observer turns one run's events into spans and metrics: a span for the
// run, each job, attempt, turn and tool call, events for retries, holds,
// concurrency changes and stops. It is a runner.Reporter (for
// runner.Options.Observer) and gives runner.Options.CLIEnv.
type Observer struct {
	inst   *instruments
	tracer trace.Tracer

	mu     sync.Mutex
	parent context.Context // of the run span
	runCtx context.Context
	run    trace.Span
	jobs   map[string]*jobSpans
}

// jobSpans are the open spans of one job.
type jobSpans struct {
	ctx             context.Context
	span            trace.Span
	attempt         trace.Span
	attemptCtx      context.Context
	attempts        int
	turn            trace.Span
	turnCtx         context.Context // the latest turn's, open or not: tool calls end after it
	started, closed bool
}

// Wire sets o's Observer (when telemetry is on) and CLIEnv (always: a CLI
// whose telemetry the user turned on learns the run and job it belongs
// to, whether pneuma exports or not).
func (t *Telemetry) Wire(o *runner.Options) {
	obs := t.Observer()
	if obs == nil {
		o.CLIEnv = func(runID, job string, env []string) []string {
			return cliEnv(runID, job, zeroSC, env)
		}
		return
	}
	o.Observer, o.CLIEnv = obs, obs.CLIEnv
}

// Observer returns a new run's observer, or nil when telemetry is off.
func (t *Telemetry) Observer() *Observer {
	if t == nil || t.inst == nil {
		return nil
	}
	return &Observer{inst: t.inst, tracer: t.tracerOrNoop(), parent: t.parent, runCtx: t.parent, jobs: map[string]*jobSpans{}}
}

// CLIEnv is runner.Options.CLIEnv: the job's span becomes the CLI's parent.
func (o *Observer) CLIEnv(runID, job string, env []string) []string {
	o.mu.Lock()
	var sc trace.SpanContext
	if j := o.jobs[job]; j != nil {
		sc = j.span.SpanContext()
	}
	o.mu.Unlock()
	return cliEnv(runID, job, sc, env)
}

// Event is runner.Reporter.
func (o *Observer) Event(e runner.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e.Type {
	case runner.EventRunStarted:
		o.runCtx, o.run = o.tracer.Start(o.parent, SpanRun, trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.String("pneuma.run_id", e.RunID), attribute.Int("pneuma.jobs", e.Jobs)))
	case runner.EventJobStarted:
		o.jobStarted(e)
	case runner.EventAttemptStarted:
		o.attemptStarted(e)
	case runner.EventAttemptFinished:
		o.attemptFinished(e)
	case runner.EventTurnStarted:
		o.turnStarted(e)
	case runner.EventTurnFinished:
		o.turnFinished(e)
	case runner.EventToolCall:
		o.toolCall(e)
	case runner.EventJobFinished:
		o.jobFinished(e)
	case runner.EventRunFinished:
		o.runFinished(e)
	default:
		o.note(e)
	}
}

func (o *Observer) job(name string) *jobSpans {
	j := o.jobs[name]
	if j == nil {
		j = &jobSpans{}
		o.jobs[name] = j
	}
	return j
}

func (o *Observer) jobStarted(e runner.Event) {
	j := o.job(e.Job)
	j.ctx, j.span = o.tracer.Start(o.runCtx, SpanJob, trace.WithTimestamp(e.Time), trace.WithAttributes(
		attribute.String("pneuma.run_id", e.RunID), attribute.String("pneuma.job", e.Job),
		attribute.String("pneuma.branch", e.Branch), attribute.String("gen_ai.system", "anthropic"),
		attribute.String("gen_ai.provider.name", "anthropic"), attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", "claude-code")))
	j.started = true
	o.inst.jobsRunning.Add(context.Background(), 1)
}

func (o *Observer) attemptStarted(e runner.Event) {
	j := o.job(e.Job)
	if j.span == nil {
		return
	}
	o.endAttempt(j, e.Time)
	j.attempts, j.turnCtx = j.attempts+1, nil
	wait := time.Duration(e.WaitMS) * time.Millisecond
	j.attemptCtx, j.attempt = o.tracer.Start(j.ctx, SpanAttempt, trace.WithTimestamp(e.Time.Add(-wait)), trace.WithAttributes(
		attribute.String("pneuma.job", e.Job), attribute.Int("pneuma.attempt", j.attempts), attribute.Int64("pneuma.queue_wait_ms", e.WaitMS)))
	j.attempt.AddEvent("cli_started", trace.WithTimestamp(e.Time))
	o.inst.queueWait.Record(context.Background(), wait.Seconds())
}

func (o *Observer) attemptFinished(e runner.Event) {
	j := o.job(e.Job)
	if j.attempt == nil {
		return
	}
	o.endTurn(j, e.Time)
	j.attempt.SetAttributes(attribute.String("pneuma.status", e.Status), attribute.String("pneuma.reason", e.Reason),
		attribute.Float64("pneuma.cost_usd", e.CostUSD), attribute.String("gen_ai.request.model", e.Model))
	if e.Usage != nil {
		j.attempt.SetAttributes(usageAttrs(*e.Usage)...)
	}
	failIf(j.attempt, e.Status, e.Error)
	o.endAttempt(j, e.Time)
}

func (o *Observer) endAttempt(j *jobSpans, at time.Time) {
	o.endTurn(j, at)
	if j.attempt != nil {
		j.attempt.End(trace.WithTimestamp(at))
		j.attempt = nil
	}
}

func (o *Observer) turnStarted(e runner.Event) {
	j := o.job(e.Job)
	parent := j.attemptCtx
	if j.attempt == nil {
		parent = j.ctx
	}
	if parent == nil {
		return
	}
	o.endTurn(j, e.Time)
	j.turnCtx, j.turn = o.tracer.Start(parent, SpanTurn, trace.WithTimestamp(e.Time), trace.WithAttributes(
		attribute.String("pneuma.job", e.Job), attribute.Int("pneuma.turn", e.Turn),
		attribute.String("gen_ai.system", "anthropic"), attribute.String("gen_ai.operation.name", "invoke_agent")))
}

func (o *Observer) turnFinished(e runner.Event) {
	ctx := context.Background()
	model := attribute.String("model", modelOr(e.Model))
	o.inst.turnDuration.Record(ctx, float64(e.DurationMS)/1000, metric.WithAttributes(model))
	if e.ErrorStatus != nil {
		o.inst.apiErrors.Add(ctx, 1, metric.WithAttributes(attribute.Int("status", *e.ErrorStatus), attribute.Bool("retried", false)))
	}
	j := o.job(e.Job)
	if j.turn == nil {
		return
	}
	j.turn.SetAttributes(attribute.String("gen_ai.response.model", e.Model), attribute.Float64("pneuma.cost_usd", e.CostUSD),
		attribute.Int64("pneuma.duration_ms", e.DurationMS))
	if e.Usage != nil {
		j.turn.SetAttributes(usageAttrs(*e.Usage)...)
	}
	if e.ErrorStatus != nil {
		j.turn.SetAttributes(attribute.Int("http.response.status_code", *e.ErrorStatus))
	}
	if e.Status == "error" {
		j.turn.SetStatus(codes.Error, safe(firstNonEmpty(e.Error, "the turn's result is an error")))
	}
	o.endTurn(j, e.Time)
}

func (o *Observer) endTurn(j *jobSpans, at time.Time) {
	if j.turn != nil {
		j.turn.End(trace.WithTimestamp(at))
		j.turn = nil
	}
}

func (o *Observer) toolCall(e runner.Event) {
	tc := e.Tool
	if tc == nil {
		return
	}
	decidedBy := "cli"
	if tc.Via != "" {
		decidedBy = "pneuma"
	}
	o.inst.toolCalls.Add(context.Background(), 1, metric.WithAttributes(attribute.String("tool", tc.Name), attribute.String("decision", tc.Decision)))
	j := o.job(e.Job)
	parent := firstCtx(j.turnCtx, j.attemptCtx, j.ctx)
	if parent == nil {
		return
	}
	start := tc.Started
	if start.IsZero() || start.After(e.Time) {
		start = e.Time
	}
	_, s := o.tracer.Start(parent, SpanTool+" "+tc.Name, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", tc.Name),
		attribute.String("gen_ai.tool.call.id", tc.ToolUseID), attribute.String("pneuma.job", e.Job),
		attribute.String("pneuma.tool.input", tc.Input), attribute.String("pneuma.tool.decision", tc.Decision),
		attribute.String("pneuma.tool.decided_by", decidedBy), attribute.String("pneuma.tool.rule", tc.Rule),
		attribute.String("pneuma.tool.via", tc.Via), attribute.String("pneuma.tool.agent", tc.Agent)))
	switch {
	case tc.OK == nil:
		s.SetAttributes(attribute.Bool("pneuma.tool.answered", false))
	case !*tc.OK:
		s.SetStatus(codes.Error, tc.Error)
	}
	s.End(trace.WithTimestamp(e.Time))
}

func (o *Observer) jobFinished(e runner.Event) {
	j := o.job(e.Job)
	if j.span == nil { // skipped before it started: a span all the same
		j.ctx, j.span = o.tracer.Start(o.runCtx, SpanJob, trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.String("pneuma.run_id", e.RunID), attribute.String("pneuma.job", e.Job)))
	}
	o.endAttempt(j, e.Time)
	if res := e.Result; res != nil {
		o.recordJob(res)
		j.span.SetAttributes(jobAttrs(res)...)
		failIf(j.span, res.Status, res.Error)
	}
	j.span.End(trace.WithTimestamp(e.Time))
	if j.started && !j.closed {
		o.inst.jobsRunning.Add(context.Background(), -1)
	}
	j.closed = true
	// Its spans are ended: kept, a run of 10,000 jobs held every job's
	// span and context to its end (about 300 bytes a job, issue 27).
	delete(o.jobs, e.Job)
}

func (o *Observer) runFinished(e runner.Event) {
	for name, j := range o.jobs {
		if !j.closed {
			o.jobFinished(runner.Event{Job: name, Time: e.Time, RunID: e.RunID})
		}
	}
	if o.run == nil {
		return
	}
	if r := e.Report; r != nil {
		t := r.Totals
		o.run.SetAttributes(attribute.String("pneuma.status", r.Status), attribute.Float64("pneuma.cost_usd", t.CostUSD),
			attribute.Int("pneuma.jobs.succeeded", t.Succeeded), attribute.Int("pneuma.jobs.failed", t.Failed),
			attribute.Int("pneuma.jobs.skipped", t.Skipped), attribute.Int("pneuma.jobs.interrupted", t.Interrupted),
			attribute.Int64("gen_ai.usage.input_tokens", t.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", t.OutputTokens))
		if r.Status != report.RunSucceeded {
			o.run.SetStatus(codes.Error, "run "+r.Status)
		}
	}
	o.run.End(trace.WithTimestamp(e.Time))
}
