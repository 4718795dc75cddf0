package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// cliEnv adds to a CLI's environment OTEL_RESOURCE_ATTRIBUTES with
// pneuma.run_id and pneuma.job after the user's own, and, when the job has
// a span, its TRACEPARENT (and TRACESTATE): when the user turns the CLI's
// telemetry on, what it exports carries the job it belongs to. It never
// turns the CLI's telemetry on.
func cliEnv(runID, job string, sc trace.SpanContext, env []string) []string {
	out := make([]string, 0, len(env)+3)
	var userAttrs string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "OTEL_RESOURCE_ATTRIBUTES":
			userAttrs = v
			continue
		case "TRACEPARENT", "TRACESTATE":
			if sc.IsValid() {
				continue // pneuma's job span is the CLI's parent
			}
		}
		out = append(out, kv)
	}
	attrs := "pneuma.run_id=" + escapeValue(runID) + ",pneuma.job=" + escapeValue(job)
	if userAttrs = strings.TrimSpace(userAttrs); userAttrs != "" {
		attrs = userAttrs + "," + attrs
	}
	out = append(out, "OTEL_RESOURCE_ATTRIBUTES="+attrs)
	if sc.IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
		out = append(out, "TRACEPARENT="+carrier.Get("traceparent"))
		if ts := carrier.Get("tracestate"); ts != "" {
			out = append(out, "TRACESTATE="+ts)
		}
	}
	return out
}

// parentFrom is the trace context pneuma itself was started in
// (TRACEPARENT and TRACESTATE, as a CI system may set them): the parent of
// its run spans.
func parentFrom(env func(string) string) context.Context {
	carrier := propagation.MapCarrier{"traceparent": env("TRACEPARENT"), "tracestate": env("TRACESTATE")}
	return propagation.TraceContext{}.Extract(context.Background(), carrier)
}

// escapeValue percent-encodes a resource attribute value: everything
// outside the W3C Baggage value octets, and '%' and '='.
func escapeValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte(`",;\%=`, c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// parseAttributes reads OTEL_RESOURCE_ATTRIBUTES (key=value,...; values
// percent-encoded). Entries it cannot read are left out.
func parseAttributes(s string) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
			out = append(out, attribute.String(k, u))
		}
	}
	return out
}

// serviceFrom returns the service.name among attrs.
func serviceFrom(attrs []attribute.KeyValue) string {
	for _, a := range attrs {
		if a.Key == "service.name" {
			return a.Value.AsString()
		}
	}
	return ""
}

// zeroSC is no span: the CLI gets no TRACEPARENT of pneuma's.
var zeroSC trace.SpanContext
