package telemetry

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// HTTP counts the requests h answers by route (the pattern the mux
// matched, "unmatched" for none) and code. Without telemetry it returns h.
func (t *Telemetry) HTTP(h http.Handler) http.Handler {
	if t == nil || t.inst == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &codeWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(cw, r)
		route := r.Pattern // set by the mux on this request
		if route == "" {
			route = "unmatched"
		}
		t.inst.httpRequests.Add(r.Context(), 1, metric.WithAttributes(attribute.String("route", route), attribute.String("code", strconv.Itoa(cw.code))))
	})
}

// ConnState is http.Server.ConnState: it counts open connections.
func (t *Telemetry) ConnState(_ net.Conn, s http.ConnState) {
	if t == nil || t.inst == nil {
		return
	}
	switch s {
	case http.StateNew:
		t.inst.httpOpen.Add(context.Background(), 1)
	case http.StateClosed, http.StateHijacked:
		t.inst.httpOpen.Add(context.Background(), -1)
	}
}

// EventsSent counts events written to WebSocket clients (serve.Counters).
func (t *Telemetry) EventsSent(n int) {
	if t != nil && t.inst != nil {
		t.inst.eventsSent.Add(context.Background(), int64(n))
	}
}

// ClientDropped counts a WebSocket client dropped for lag (serve.Counters).
func (t *Telemetry) ClientDropped() {
	if t != nil && t.inst != nil {
		t.inst.clientsDropped.Add(context.Background(), 1)
	}
}

// codeWriter remembers the status code of a response.
type codeWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *codeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *codeWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (and WebSocket upgrades) reach the
// connection.
func (w *codeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over (WebSocket upgrades); the request
// counts as 101.
func (w *codeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && !w.wrote {
		w.code, w.wrote = http.StatusSwitchingProtocols, true
	}
	return c, brw, err
}

// Flush sends what was written (long polls).
func (w *codeWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }
