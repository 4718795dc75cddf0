package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pneuma-cli/pneuma/telemetry"
)

// telemetryShutdown bounds the flush of telemetry at exit: a dead
// collector delays pneuma's exit by at most this.
const telemetryShutdown = 5 * time.Second

// startTelemetry sets OpenTelemetry up from the OTEL_* environment;
// prometheus keeps the instruments for a /metrics endpoint (serve). stop
// flushes what is left, within telemetryShutdown.
func startTelemetry(ctx context.Context, io *IO, prometheus bool) (tel *telemetry.Telemetry, stop func(), err error) {
	tel, err = telemetry.Setup(ctx, telemetry.Config{Getenv: io.Getenv, Version: Version, Prometheus: prometheus})
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	return tel, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryShutdown)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			fmt.Fprintf(io.ErrOut, "warning: %v\n", err)
		}
	}, nil
}

// serveMetrics serves h on a listener of its own (--metrics-addr), without
// a token. It returns the listener's address and a function stopping it.
func serveMetrics(addr string, h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("--metrics-addr: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }() // ends with Close below
	return ln.Addr().String(), func() { _ = hs.Close() }, nil
}
