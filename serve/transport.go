package serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// hostAllowed checks the Host header against the names the server is
// reached by (DNS rebinding: a page of evil.example resolving to 127.0.0.1
// sends Host: evil.example:7077). An empty AllowHosts allows any.
func (s *Server) hostAllowed(host string) bool {
	return len(s.cfg.AllowHosts) == 0 || slices.Contains(s.cfg.AllowHosts, strings.ToLower(host))
}

// checkHost answers 421 to a request for a host this server is not.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /healthz carries nothing a rebinding page could want, and load
		// balancers probe it by address.
		if !s.hostAllowed(r.Host) && r.URL.Path != "/healthz" {
			writeError(w, http.StatusMisdirectedRequest, "this server does not answer for host %q", r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// noStore keeps API answers (sessions, transcripts, diffs) out of caches.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/healthz" {
			w.Header().Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status for the access log. It hijacks for
// WebSockets (status 101).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the connection cannot be hijacked")
	}
	w.status = http.StatusSwitchingProtocols
	return hj.Hijack()
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// AccessLog writes one line per request: time, method, route pattern (the
// path's ids stay out of it), status, duration and the token's scope,
// never the token.
type AccessLog struct {
	mu sync.Mutex
	w  io.Writer
}

// NewAccessLog logs to w.
func NewAccessLog(w io.Writer) *AccessLog { return &AccessLog{w: w} }

func (l *AccessLog) line(method, route string, status int, d time.Duration, sc Scope) {
	if l == nil || l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s %q %d %s scope=%s\n", time.Now().UTC().Format(time.RFC3339), method, route, status, d.Round(time.Microsecond), sc)
}

// logged writes each request's access-log line, naming the route pattern
// mux chose ("(no route)" for its 404s and 405s).
func (s *Server) logged(mux *http.ServeMux, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		sc := ScopeNone
		_, route := mux.Handler(r)
		// A wrapper outside (telemetry's request counter) reads the
		// pattern from its own request, which the copy below is not.
		r.Pattern = route
		r = r.WithContext(withScopeSlot(r.Context(), &sc))
		if route == "" {
			route = "(no route)"
		}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			s.cfg.AccessLog.line(r.Method, route, status, time.Since(start), sc)
		}()
		next.ServeHTTP(sw, r)
	})
}
