//go:build unix

package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/telemetry"
)

// BenchmarkObserverJob is the telemetry cost of one job (an attempt, three
// turns, six tool calls) with traces and metrics exported over OTLP/HTTP;
// issue 23 allows 0.5 ms of CPU per job.
func BenchmarkObserverJob(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL})})
	if err != nil {
		b.Fatal(err)
	}
	obs := tel.Observer()
	now := time.Now()
	obs.Event(runner.Event{Type: runner.EventRunStarted, Time: now, RunID: "r"})
	ok := true
	res := &report.Job{Name: "j", Status: report.StatusSucceeded, CostUSD: 0.2, Model: "claude-opus-4-8", Usage: report.Usage{InputTokens: 100, OutputTokens: 10}}
	usage := &report.Usage{InputTokens: 100, OutputTokens: 10}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		obs.Event(runner.Event{Type: runner.EventJobStarted, Time: now, Job: "j"})
		obs.Event(runner.Event{Type: runner.EventAttemptStarted, Time: now, Job: "j", WaitMS: 3})
		for turn := 1; turn <= 3; turn++ {
			obs.Event(runner.Event{Type: runner.EventTurnStarted, Time: now, Job: "j", Turn: turn})
			for range 2 {
				obs.Event(runner.Event{Type: runner.EventToolCall, Time: now, Job: "j", Tool: &runner.ToolCall{Name: "Bash", Input: "go test ./...", Decision: "allow", Via: "hook", OK: &ok, Started: now}})
			}
			obs.Event(runner.Event{Type: runner.EventTurnFinished, Time: now, Job: "j", Turn: turn, DurationMS: 900, Model: "claude-opus-4-8", Usage: usage})
		}
		obs.Event(runner.Event{Type: runner.EventAttemptFinished, Time: now, Job: "j", Status: report.StatusSucceeded, Usage: usage})
		obs.Event(runner.Event{Type: runner.EventJobFinished, Time: now, Job: "j", Result: res})
	}
	if err := tel.Shutdown(context.Background()); err != nil { // the export's CPU counts too
		b.Fatal(err)
	}
	// CPU, not wall time: the machine may be busy.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/job")
}

// processCPU is the CPU time the test process used so far (the sink
// receiving the exports included, so an upper bound).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
