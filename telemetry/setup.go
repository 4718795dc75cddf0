// Package telemetry turns a run's events into OpenTelemetry traces and
// metrics, configured the standard way (OTEL_* variables), and serves the
// same metrics to Prometheus for `pneuma serve`.
//
// Nothing runs unless the environment asks for it: without an OTLP endpoint
// or exporter setting, Setup returns a Telemetry that builds no spans, keeps
// no instruments and starts no goroutine (Observer returns nil).
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Config says how to set telemetry up.
type Config struct {
	// Getenv reads the OTEL_* settings (cmd's IO.Getenv).
	Getenv func(string) string
	// Version is pneuma's version (service.version).
	Version string
	// Prometheus keeps every instrument in a Prometheus registry served by
	// MetricsHandler (pneuma serve), whatever the OTEL_* settings say.
	Prometheus bool
}

// Telemetry holds the providers Setup made; the zero value (and nil) is off.
type Telemetry struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	mp     *sdkmetric.MeterProvider
	inst   *instruments
	prom   http.Handler
	queue  *boundedProcessor
	// parent is the trace pneuma was started in (TRACEPARENT), if any.
	parent context.Context
	// sessions are the open spans of serve's sessions.
	sessions sessions
}

// Setup reads the OTEL_* settings and starts what they ask for: OTLP traces
// when OTEL_TRACES_EXPORTER is otlp, or unset with an OTLP endpoint set;
// OTLP metrics likewise with OTEL_METRICS_EXPORTER; a Prometheus registry
// when c.Prometheus. The protocol is OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL:
// http/protobuf (the default) or grpc.
func Setup(ctx context.Context, c Config) (*Telemetry, error) {
	env := c.Getenv
	traces, err := wants(env, "TRACES")
	if err != nil {
		return nil, err
	}
	metrics, err := wants(env, "METRICS")
	if err != nil {
		return nil, err
	}
	t := &Telemetry{parent: parentFrom(env)}
	if !traces && !metrics && !c.Prometheus {
		return t, nil
	}
	res, err := newResource(ctx, env, c.Version)
	if err != nil {
		return nil, err
	}
	if traces {
		if err := t.startTraces(ctx, env, res); err != nil {
			return nil, err
		}
	}
	var readers []sdkmetric.Option
	if metrics {
		exp, err := metricExporter(ctx, env)
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, err
		}
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	if c.Prometheus {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
		if err != nil {
			_ = t.Shutdown(ctx)
			return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		t.prom = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	var meter metric.Meter = noop.NewMeterProvider().Meter(scope)
	if len(readers) > 0 {
		t.mp = sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
		meter = t.mp.Meter(scope)
	}
	if t.inst, err = newInstruments(meter); err != nil {
		_ = t.Shutdown(ctx)
		return nil, err
	}
	t.inst.spansDropped.Add(ctx, 0) // shown, even before the first drop
	if t.queue != nil {
		t.queue.dropped = t.inst.spansDropped
	}
	return t, nil
}

// scope is the instrumentation scope of pneuma's spans and instruments.
const scope = "github.com/pneuma-cli/pneuma"

// wants says whether a signal (TRACES, METRICS) is to be exported over OTLP.
func wants(env func(string) string, signal string) (bool, error) {
	name := "OTEL_" + signal + "_EXPORTER"
	switch v := strings.TrimSpace(env(name)); v {
	case "":
		return env("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != "", nil
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "prometheus":
		if signal == "METRICS" {
			return false, nil // pneuma serve's /metrics; pneuma run has no server to scrape
		}
		fallthrough
	default:
		return false, fmt.Errorf("telemetry: %s=%q: pneuma exports otlp or none", name, v)
	}
}

// protocol is the OTLP protocol of a signal.
func protocol(env func(string) string, signal string) (string, error) {
	p := firstNonEmpty(env("OTEL_EXPORTER_OTLP_"+signal+"_PROTOCOL"), env("OTEL_EXPORTER_OTLP_PROTOCOL"), "http/protobuf")
	switch p {
	case "http/protobuf", "grpc":
		return p, nil
	}
	return "", fmt.Errorf("telemetry: OTLP protocol %q: pneuma speaks http/protobuf or grpc", p)
}

// endpoint is the OTLP endpoint URL of a signal, "" for the exporter's
// default; path is the signal's path under a base endpoint (HTTP only).
func endpoint(env func(string) string, signal, path string) string {
	if e := env("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT"); e != "" {
		return e
	}
	if e := env("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		return strings.TrimSuffix(e, "/") + path
	}
	return ""
}

func (t *Telemetry) startTraces(ctx context.Context, env func(string) string, res *resource.Resource) error {
	proto, err := protocol(env, "TRACES")
	if err != nil {
		return err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		var opts []otlptracegrpc.Option
		if e := endpoint(env, "TRACES", ""); e != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(e))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		var opts []otlptracehttp.Option
		if e := endpoint(env, "TRACES", "/v1/traces"); e != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(e))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return fmt.Errorf("telemetry: OTLP trace exporter: %w", err)
	}
	t.queue = newBoundedProcessor(exp, maxQueuedSpans)
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.queue), sdktrace.WithResource(res))
	t.tracer = t.tp.Tracer(scope)
	return nil
}

func metricExporter(ctx context.Context, env func(string) string) (sdkmetric.Exporter, error) {
	proto, err := protocol(env, "METRICS")
	if err != nil {
		return nil, err
	}
	var exp sdkmetric.Exporter
	if proto == "grpc" {
		var opts []otlpmetricgrpc.Option
		if e := endpoint(env, "METRICS", ""); e != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(e))
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	} else {
		var opts []otlpmetrichttp.Option
		if e := endpoint(env, "METRICS", "/v1/metrics"); e != "" {
			opts = append(opts, otlpmetrichttp.WithEndpointURL(e))
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP metric exporter: %w", err)
	}
	return exp, nil
}

// newResource is service.name pneuma (OTEL_SERVICE_NAME overrides it),
// service.version, and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, env func(string) string, version string) (*resource.Resource, error) {
	attrs := parseAttributes(env("OTEL_RESOURCE_ATTRIBUTES"))
	attrs = append(attrs, semconv.ServiceName(firstNonEmpty(env("OTEL_SERVICE_NAME"), serviceFrom(attrs), "pneuma")))
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return res, nil
}

// Enabled says whether anything is exported or served.
func (t *Telemetry) Enabled() bool { return t != nil && (t.tp != nil || t.mp != nil) }

// MetricsHandler serves the instruments in the Prometheus text format; nil
// unless Config.Prometheus.
func (t *Telemetry) MetricsHandler() http.Handler {
	if t == nil {
		return nil
	}
	return t.prom
}

// SpansDropped is how many spans were dropped: the export queue was full
// (a slow or dead collector) or their export failed.
func (t *Telemetry) SpansDropped() int64 {
	if t == nil || t.queue == nil {
		return 0
	}
	return t.queue.Dropped()
}

// Shutdown flushes and stops the exporters, within ctx: a dead collector
// costs at most ctx's time, and what was not sent is dropped.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: traces: %w", err))
		}
	}
	if t.mp != nil {
		if err := t.mp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry: metrics: %w", err))
		}
	}
	return errors.Join(errs...)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
