package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// maxQueuedSpans bounds the spans ended and not yet exported.
const maxQueuedSpans = 4096

// boundedProcessor is the SDK's batch processor with a bound that counts:
// a span ended while max spans wait for export (a slow or dead collector)
// is dropped and counted in pneuma.telemetry.spans.dropped, never waited
// for. The batch processor's own queue is as large as the bound, so it
// never drops silently.
type boundedProcessor struct {
	sdktrace.SpanProcessor
	waiting atomic.Int64
	max     int64
	// dropped counts the spans dropped (set once the instruments exist).
	dropped metric.Int64Counter
	lost    atomic.Int64
}

func newBoundedProcessor(exp sdktrace.SpanExporter, max int) *boundedProcessor {
	p := &boundedProcessor{max: int64(max)}
	p.SpanProcessor = sdktrace.NewBatchSpanProcessor(countingExporter{exp, p}, sdktrace.WithMaxQueueSize(max))
	return p
}

// OnEnd queues the span unless max spans wait already.
func (p *boundedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if p.waiting.Add(1) > p.max {
		p.waiting.Add(-1)
		p.drop(1)
		return
	}
	p.SpanProcessor.OnEnd(s)
}

func (p *boundedProcessor) drop(n int) {
	p.lost.Add(int64(n))
	if p.dropped != nil {
		p.dropped.Add(context.Background(), int64(n))
	}
}

// Dropped is how many spans were dropped so far (the queue was full, or
// their export failed).
func (p *boundedProcessor) Dropped() int64 { return p.lost.Load() }

// countingExporter tells its processor which spans left the queue, and
// counts those whose export failed as dropped.
type countingExporter struct {
	sdktrace.SpanExporter
	p *boundedProcessor
}

func (e countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	e.p.waiting.Add(-int64(len(spans)))
	if err != nil {
		e.p.drop(len(spans))
	}
	return err
}
