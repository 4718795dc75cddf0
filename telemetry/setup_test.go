package telemetry_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/telemetry"
)

// TestOffCostsNothing: with no OTEL_* setting, Setup starts no goroutine,
// the runner gets no observer (the fine events are not even built), and
// the CLI still learns its run and job, and keeps the TRACEPARENT pneuma
// was given.
func TestOffCostsNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter([]string{"OTEL_SERVICE_NAME=x", "OTEL_TRACES_EXPORTER=none", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="})})
	if err != nil {
		t.Fatal(err)
	}
	if tel.Enabled() || tel.Observer() != nil || tel.MetricsHandler() != nil {
		t.Fatalf("telemetry is on with nothing configured")
	}
	var o runner.Options
	tel.Wire(&o)
	if o.Observer != nil || o.CLIEnv == nil {
		t.Fatalf("off: observer %v, CLIEnv set %v", o.Observer, o.CLIEnv != nil)
	}
	env := strings.Join(o.CLIEnv("r1", "lint", []string{"PATH=/bin", "TRACEPARENT=00-ci"}), "\n")
	if !strings.Contains(env, "OTEL_RESOURCE_ATTRIBUTES=pneuma.run_id=r1,pneuma.job=lint") || !strings.Contains(env, "TRACEPARENT=00-ci") {
		t.Errorf("off: CLI env %q", env)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d -> %d with telemetry off", before, after)
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		env     []string
		on      bool
		wantErr string
	}{
		{env: nil},
		{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"}, on: true},
		{env: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:1/v1/traces"}, on: true},
		{env: []string{"OTEL_TRACES_EXPORTER=otlp"}, on: true},
		{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}},
		{env: []string{"OTEL_METRICS_EXPORTER=prometheus"}},
		{env: []string{"OTEL_TRACES_EXPORTER=zipkin"}, wantErr: `OTEL_TRACES_EXPORTER="zipkin"`},
		{env: []string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}, wantErr: `"http/json"`},
		{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}, on: true},
	} {
		tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter(tc.env)})
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %s", tc.env, err, tc.wantErr)
			}
			continue
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
			continue
		}
		if tel.Enabled() != tc.on {
			t.Errorf("%v: enabled %v", tc.env, tel.Enabled())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = tel.Shutdown(ctx) // nothing listens at :1; what was not sent is dropped
		cancel()
	}
}

func TestCLIEnvKeepsTheUsersAttributes(t *testing.T) {
	tel := promTelemetry(t)
	obs := tel.Observer()
	obs.Event(runner.Event{Type: runner.EventRunStarted, Time: time.Now(), RunID: "r 1"})
	obs.Event(runner.Event{Type: runner.EventJobStarted, Time: time.Now(), RunID: "r 1", Job: "a,b=c"})
	env := obs.CLIEnv("r 1", "a,b=c", []string{"OTEL_RESOURCE_ATTRIBUTES=team=core", "PATH=/bin"})
	got := strings.Join(env, "\n")
	if !strings.Contains(got, "OTEL_RESOURCE_ATTRIBUTES=team=core,pneuma.run_id=r%201,pneuma.job=a%2Cb%3Dc") || strings.Count(got, "OTEL_RESOURCE_ATTRIBUTES") != 1 {
		t.Errorf("env %q", got)
	}
}

// TestDeadCollector: a collector that never answers costs a job nothing:
// events never wait, spans past the queue's bound are dropped and counted,
// and Shutdown gives up at its deadline.
func TestDeadCollector(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + hung.URL})})
	if err != nil {
		t.Fatal(err)
	}
	obs := tel.Observer()
	const jobs = 5000 // two spans each: more than the queue holds
	start := time.Now()
	feedJobs(obs, jobs)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("%d jobs' events took %v against a dead collector", jobs, d)
	}
	if !poll.Until(10*time.Second, func() bool { return tel.SpansDropped() >= 2*jobs-4096 }) {
		t.Errorf("dropped %d spans, want at least %d", tel.SpansDropped(), 2*jobs-4096)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	_ = tel.Shutdown(ctx) // an error: the deadline passed
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("shutdown against a dead collector took %v", d)
	}
}

// feedJobs sends the events of a run of n jobs with one turn each.
func feedJobs(obs *telemetry.Observer, n int) {
	now := time.Now()
	obs.Event(runner.Event{Type: runner.EventRunStarted, Time: now, RunID: "r", Jobs: n})
	for i := range n {
		name := "job" + itoa(int64(i))
		obs.Event(runner.Event{Type: runner.EventJobStarted, Time: now, RunID: "r", Job: name})
		obs.Event(runner.Event{Type: runner.EventTurnStarted, Time: now, RunID: "r", Job: name, Turn: 1})
		obs.Event(runner.Event{Type: runner.EventTurnFinished, Time: now, RunID: "r", Job: name, Turn: 1, DurationMS: 1200, Model: "claude-opus-4-8"})
		obs.Event(runner.Event{Type: runner.EventJobFinished, Time: now, RunID: "r", Job: name, Result: &report.Job{
			Name: name, Status: report.StatusSucceeded, CostUSD: 0.01, Model: "claude-opus-4-8", DurationMS: 4000,
			Usage: report.Usage{InputTokens: 10, OutputTokens: 5}}})
	}
}

// TestRunJoinsTheCallersTrace: a TRACEPARENT in pneuma's environment (a CI
// system's) is the parent of the run span.
func TestRunJoinsTheCallersTrace(t *testing.T) {
	rc, url := httpReceiver(t)
	const trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + url, "TRACEPARENT=00-" + trace + "-" + parent + "-01"})})
	if err != nil {
		t.Fatal(err)
	}
	obs := tel.Observer()
	obs.Event(runner.Event{Type: runner.EventRunStarted, Time: time.Now(), RunID: "r"})
	obs.Event(runner.Event{Type: runner.EventRunFinished, Time: time.Now(), RunID: "r"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, _, _ := rc.snapshot()
	if len(spans) != 1 || hex.EncodeToString(spans[0].TraceId) != trace || hex.EncodeToString(spans[0].ParentSpanId) != parent {
		t.Fatalf("spans %v", spans)
	}
}
