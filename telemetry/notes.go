package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// note records the events that are moments, not spans: retries, holds,
// concurrency changes and stops.
func (o *Observer) note(e runner.Event) {
	ctx := context.Background()
	at := trace.WithTimestamp(e.Time)
	j := o.jobs[e.Job]
	switch e.Type {
	case runner.EventAPIRetry:
		attrs := []attribute.KeyValue{attribute.Int("pneuma.retry.attempt", e.Attempt),
			attribute.Int64("pneuma.retry.delay_ms", e.DelayMS), attribute.String("pneuma.retry.error", safe(e.Reason))}
		if e.ErrorStatus != nil {
			attrs = append(attrs, attribute.Int("http.response.status_code", *e.ErrorStatus))
			o.inst.apiErrors.Add(ctx, 1, metric.WithAttributes(attribute.Int("status", *e.ErrorStatus), attribute.Bool("retried", true)))
		}
		o.spanOf(j).AddEvent("api_retry", at, trace.WithAttributes(attrs...))
	case runner.EventJobRetry:
		if j != nil && j.span != nil {
			j.span.AddEvent("job_retry", at, trace.WithAttributes(attribute.Int("pneuma.attempt", e.Attempt),
				attribute.String("pneuma.reason", e.Reason), attribute.Int64("pneuma.retry.delay_ms", e.DelayMS)))
		}
	case runner.EventStopping:
		o.spanOf(j).AddEvent("stop", at, trace.WithAttributes(attribute.String("pneuma.reason", e.Reason)))
	case runner.EventUsageLimitWait:
		attrs := []attribute.KeyValue{attribute.String("pneuma.job", e.Job), attribute.String("pneuma.message", safe(e.Message))}
		o.inst.holds.Add(ctx, 1)
		if e.ResumeAt != nil {
			attrs = append(attrs, attribute.String("pneuma.resume_at", e.ResumeAt.UTC().Format("2006-01-02T15:04:05Z")))
			o.inst.holdWait.Record(ctx, max(e.ResumeAt.Sub(e.Time).Seconds(), 0))
		}
		o.runEvent("usage_limit_hold", e, attrs...)
		if j != nil && j.span != nil {
			j.span.AddEvent("usage_limit_hold", at, trace.WithAttributes(attrs...))
		}
	case runner.EventUsageReserve:
		o.runEvent("usage_reserve", e, attribute.String("pneuma.job", e.Job), attribute.String("pneuma.message", safe(e.Message)))
	case runner.EventConcurrency:
		o.inst.concurrency.Record(ctx, int64(e.Concurrency))
		o.runEvent("concurrency_changed", e, attribute.Int("pneuma.concurrency", e.Concurrency), attribute.String("pneuma.reason", e.Reason))
	}
}

func (o *Observer) runEvent(name string, e runner.Event, attrs ...attribute.KeyValue) {
	if o.run != nil {
		o.run.AddEvent(name, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	}
}

// spanOf is a job's innermost open span among attempt and job, else the
// run's (a non-recording span when there is none).
func (o *Observer) spanOf(j *jobSpans) trace.Span {
	switch {
	case j != nil && j.attempt != nil:
		return j.attempt
	case j != nil && j.span != nil:
		return j.span
	case o.run != nil:
		return o.run
	}
	return trace.SpanFromContext(context.Background())
}

// recordJob adds a finished job to the metrics.
func (o *Observer) recordJob(res *report.Job) {
	ctx := context.Background()
	o.inst.jobsFinished.Add(ctx, 1, metric.WithAttributes(attribute.String("status", res.Status), attribute.String("reason", res.Reason)))
	o.inst.jobDuration.Record(ctx, float64(res.DurationMS)/1000, metric.WithAttributes(attribute.String("status", res.Status)))
	if res.Sandbox != nil && res.Sandbox.RefusedCount > 0 {
		o.inst.sandboxRefused.Add(ctx, int64(res.Sandbox.RefusedCount))
	}
	if res.Sandbox != nil {
		for op, n := range map[string]int{"read": res.Sandbox.DeniedReads, "write": res.Sandbox.DeniedWrites} {
			if n > 0 {
				o.inst.sandboxDenied.Add(ctx, int64(n), metric.WithAttributes(attribute.String("op", op)))
			}
		}
	}
	if res.CostUSD > 0 {
		o.inst.cost.Add(ctx, res.CostUSD, metric.WithAttributes(attribute.String("model", modelOr(res.Model))))
	}
	if len(res.ModelUsage) > 0 {
		for model, mu := range res.ModelUsage {
			recordTokens(o.inst, model, report.Usage{InputTokens: mu.InputTokens, OutputTokens: mu.OutputTokens,
				CacheReadInputTokens: mu.CacheReadInputTokens, CacheCreationInputTokens: mu.CacheCreationInputTokens})
		}
		return
	}
	recordTokens(o.inst, modelOr(res.Model), res.Usage)
}

// recordTokens adds usage to the token counter, by kind.
func recordTokens(inst *instruments, model string, u report.Usage) {
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadInputTokens}, {"cache_creation", u.CacheCreationInputTokens}} {
		if k.n > 0 {
			inst.tokens.Add(context.Background(), k.n, metric.WithAttributes(attribute.String("kind", k.kind), attribute.String("model", model)))
		}
	}
}

// jobAttrs are a finished job's span attributes.
func jobAttrs(res *report.Job) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("pneuma.status", res.Status), attribute.String("pneuma.reason", res.Reason),
		attribute.String("pneuma.repo", res.Repo), attribute.String("pneuma.branch", res.Branch),
		attribute.Float64("pneuma.cost_usd", res.CostUSD), attribute.Int("pneuma.turns", res.NumTurns),
		attribute.Int("pneuma.attempts", len(res.Attempts)), attribute.Int("pneuma.tool_calls", res.ToolCalls),
		attribute.String("gen_ai.request.model", res.Model), attribute.String("gen_ai.conversation.id", res.SessionID),
	}
	return append(attrs, usageAttrs(res.Usage)...)
}

// usageAttrs are the GenAI token attributes, and the cache kinds as pneuma's.
func usageAttrs(u report.Usage) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int64("gen_ai.usage.input_tokens", u.InputTokens), attribute.Int64("gen_ai.usage.output_tokens", u.OutputTokens),
		attribute.Int64("pneuma.usage.cache_read_input_tokens", u.CacheReadInputTokens),
		attribute.Int64("pneuma.usage.cache_creation_input_tokens", u.CacheCreationInputTokens),
	}
}

// failIf marks a span failed for a failed or interrupted status, with its
// error redacted and shortened.
func failIf(s trace.Span, status, err string) {
	if status == report.StatusFailed || status == report.StatusInterrupted {
		s.SetStatus(codes.Error, safe(firstNonEmpty(err, status)))
	}
}

// safe is text from the CLI or the model made fit for an attribute:
// secrets redacted, one line, bounded.
func safe(s string) string { return text.Shorten(redact.String(s), 300) }

func modelOr(m string) string { return firstNonEmpty(m, "unknown") }

func firstCtx(cs ...context.Context) context.Context {
	for _, c := range cs {
		if c != nil {
			return c
		}
	}
	return nil
}
