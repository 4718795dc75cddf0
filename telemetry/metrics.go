package telemetry

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Metric names. Prometheus sees them with dots as underscores, the unit
// appended (_seconds) and _total on counters: pneuma_jobs_finished_total.
const (
	MetricJobsFinished   = "pneuma.jobs.finished"
	MetricJobsRunning    = "pneuma.jobs.running"
	MetricJobDuration    = "pneuma.job.duration"
	MetricTurnDuration   = "pneuma.turn.duration"
	MetricQueueWait      = "pneuma.queue.wait"
	MetricCost           = "pneuma.cost.usd"
	MetricTokens         = "pneuma.tokens"
	MetricHolds          = "pneuma.usage_limit.holds"
	MetricHoldWait       = "pneuma.usage_limit.wait"
	MetricAPIErrors      = "pneuma.api.errors"
	MetricToolCalls      = "pneuma.tool.calls"
	MetricConcurrency    = "pneuma.concurrency"
	MetricSpansDropped   = "pneuma.telemetry.spans.dropped"
	MetricHTTPRequests   = "pneuma.http.requests"
	MetricHTTPOpen       = "pneuma.http.connections"
	MetricEventsSent     = "pneuma.ws.events.sent"
	MetricClientsDropped = "pneuma.ws.clients.dropped"
	MetricSandboxRefused = "pneuma.sandbox.refused"
	MetricSandboxDenied  = "pneuma.sandbox.denied"
)

// instruments are every instrument pneuma records.
type instruments struct {
	jobsFinished, tokens, holds, apiErrors metric.Int64Counter
	toolCalls, spansDropped, httpRequests  metric.Int64Counter
	eventsSent, clientsDropped             metric.Int64Counter
	sandboxRefused, sandboxDenied          metric.Int64Counter
	cost                                   metric.Float64Counter
	jobsRunning, httpOpen                  metric.Int64UpDownCounter
	concurrency                            metric.Int64Gauge
	jobDuration, turnDuration, queueWait   metric.Float64Histogram
	holdWait                               metric.Float64Histogram
}

// durationBuckets fit agent work: seconds to hours.
var durationBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}

func newInstruments(m metric.Meter) (*instruments, error) {
	var i instruments
	var errs [19]error
	secs := func(name, desc string, h *metric.Float64Histogram, e *error) {
		*h, *e = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(durationBuckets...))
	}
	i.jobsFinished, errs[0] = m.Int64Counter(MetricJobsFinished, metric.WithDescription("Jobs finished, by status and reason."))
	i.cost, errs[1] = m.Float64Counter(MetricCost, metric.WithDescription("Money spent on the API, in US dollars, by model."))
	i.tokens, errs[2] = m.Int64Counter(MetricTokens, metric.WithDescription("Tokens, by kind (input, output, cache_read, cache_creation) and model."))
	i.holds, errs[3] = m.Int64Counter(MetricHolds, metric.WithDescription("Usage-limit holds: a usage limit stopped a job and the run waits for its reset."))
	i.apiErrors, errs[4] = m.Int64Counter(MetricAPIErrors, metric.WithDescription("API errors the CLI saw and retried or ended on, by HTTP status (429, 529, ...)."))
	i.toolCalls, errs[5] = m.Int64Counter(MetricToolCalls, metric.WithDescription("Tool calls, by tool and decision (allow, deny, cli)."))
	i.spansDropped, errs[6] = m.Int64Counter(MetricSpansDropped, metric.WithDescription("Spans dropped: the export queue was full or the collector failed."))
	i.httpRequests, errs[7] = m.Int64Counter(MetricHTTPRequests, metric.WithDescription("HTTP requests to pneuma serve, by route and code."))
	i.eventsSent, errs[8] = m.Int64Counter(MetricEventsSent, metric.WithDescription("Events written to WebSocket clients (pneuma serve)."))
	i.clientsDropped, errs[9] = m.Int64Counter(MetricClientsDropped, metric.WithDescription("WebSocket clients closed with 4008 because they lagged (pneuma serve)."))
	i.jobsRunning, errs[10] = m.Int64UpDownCounter(MetricJobsRunning, metric.WithDescription("Jobs running now."))
	i.httpOpen, errs[11] = m.Int64UpDownCounter(MetricHTTPOpen, metric.WithDescription("Open HTTP connections to pneuma serve."))
	i.concurrency, errs[12] = m.Int64Gauge(MetricConcurrency, metric.WithDescription("CLIs that may run at once (lowered by 429/529 storms)."))
	secs(MetricJobDuration, "Job duration, from start to result, by status.", &i.jobDuration, &errs[13])
	secs(MetricTurnDuration, "Turn duration, from prompt to result, as the CLI measured it.", &i.turnDuration, &errs[14])
	secs(MetricQueueWait, "Wait of an attempt for a start slot (concurrency, stagger, holds).", &i.queueWait, &errs[15])
	i.sandboxRefused, errs[17] = m.Int64Counter(MetricSandboxRefused, metric.WithDescription("Connections a job's sandbox proxy refused (hosts not in the API endpoint or the job's sandbox.network)."))
	i.sandboxDenied, errs[18] = m.Int64Counter(MetricSandboxDenied, metric.WithDescription("Reads and writes a job's sandbox refused, as its tool results show them, by op (read, write)."))
	secs(MetricHoldWait, "Wait a usage-limit hold announced, until the limit's reset.", &i.holdWait, &errs[16])
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("telemetry: instruments: %w", err)
		}
	}
	return &i, nil
}
