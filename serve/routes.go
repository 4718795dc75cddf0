package serve

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Auth says how a route is authenticated.
type Auth int

const (
	// AuthBearer needs Authorization: Bearer <token>.
	AuthBearer Auth = iota
	// AuthWebSocket needs the header, or (for a WebSocket upgrade, which
	// browsers cannot give headers) a first message {"type":"auth"}.
	AuthWebSocket
	// AuthNone is for /healthz, the console's static files and CORS
	// preflights: none of them carries data.
	AuthNone
)

// Route is one entry of the route table.
type Route struct {
	// Pattern is a net/http pattern with its method: "GET /api/sessions/{id}".
	Pattern string
	Auth    Auth
	// Scope is the token scope the route needs (default: read for GET,
	// operate for the rest; see routeScope).
	Scope   Scope
	handler http.HandlerFunc
	// exists, for a WebSocket route, says whether the path's session or
	// run exists; it is asked only once the client has authenticated.
	exists func(*http.Request) bool
	// transcript marks routes answering with exported transcript HTML,
	// which get a sandboxing Content-Security-Policy.
	transcript bool
}

// Security headers.
const (
	cspDefault    = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
	cspTranscript = "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:"
)

// routeTable is every route the server answers. mount wraps each one in the
// same middleware, so a route added here cannot forget auth or limits.
func (s *Server) routeTable() []Route {
	return []Route{
		{Pattern: "GET /healthz", Auth: AuthNone, handler: s.healthz},
		{Pattern: "GET /", Auth: AuthNone, handler: s.console},
		{Pattern: "OPTIONS /api/", Auth: AuthNone, handler: s.preflight},
		{Pattern: "GET /api/health", handler: s.health},
		{Pattern: "GET /metrics", handler: s.metrics},
		// An approval link's page and its form: the link's token, not the
		// bearer token, authorises them (approve.go).
		{Pattern: "GET /approve/{token}", Auth: AuthNone, handler: s.approveGet},
		{Pattern: "POST /approve/{token}", Auth: AuthNone, handler: s.approvePost},

		{Pattern: "POST /api/sessions", handler: s.admitSession},
		{Pattern: "GET /api/sessions", handler: s.listSessions},
		{Pattern: "GET /api/sessions/{id}", handler: s.getSession},
		{Pattern: "DELETE /api/sessions/{id}", handler: s.deleteSession},
		{Pattern: "POST /api/sessions/{id}/messages", handler: s.postMessage},
		{Pattern: "POST /api/sessions/{id}/interrupt", handler: s.interruptSession},
		{Pattern: "POST /api/sessions/{id}/model", handler: s.setSessionModel},
		{Pattern: "POST /api/sessions/{id}/permission-mode", handler: s.setSessionMode},
		{Pattern: "POST /api/sessions/{id}/permissions/{request_id}", handler: s.answerPermission},
		{Pattern: "GET /api/sessions/{id}/events", handler: s.sessionEvents},
		{Pattern: "GET /api/sessions/{id}/ws", Auth: AuthWebSocket, handler: s.sessionWS, exists: s.sessionExists},

		{Pattern: "POST /api/runs", handler: s.createRun},
		{Pattern: "GET /api/runs", handler: s.listRuns},
		{Pattern: "GET /api/runs/{id}", handler: s.getRun},
		{Pattern: "DELETE /api/runs/{id}", handler: s.deleteRun},
		{Pattern: "POST /api/runs/{id}/resume", handler: s.resumeRun},
		{Pattern: "GET /api/runs/{id}/jobs", handler: s.runJobs},
		{Pattern: "GET /api/runs/{id}/events", handler: s.runEvents},
		{Pattern: "GET /api/runs/{id}/ws", Auth: AuthWebSocket, handler: s.runWS, exists: s.runExists},
		{Pattern: "GET /api/runs/{id}/jobs/{job}", handler: s.runJob},
		{Pattern: "GET /api/runs/{id}/jobs/{job}/stream", handler: s.jobStream},
		{Pattern: "GET /api/runs/{id}/jobs/{job}/diff", handler: s.jobDiff},
		{Pattern: "GET /api/runs/{id}/jobs/{job}/transcript", handler: s.jobTranscript, transcript: true},

		// History reads every transcript of the host's user: the operator's.
		{Pattern: "GET /api/history/sessions", Scope: ScopeFull, handler: s.historySessions},
		{Pattern: "GET /api/history/sessions/{id}", Scope: ScopeFull, handler: s.historySession, transcript: true},
		{Pattern: "GET /api/history/usage", Scope: ScopeFull, handler: s.historyUsage},
	}
}

// mount builds the mux: every request gets its access-log line, the host
// check and Cache-Control; every route headers, CORS, the body limit and
// its auth, in that order.
func (s *Server) mount(routes []Route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		h := http.Handler(rt.handler)
		switch rt.Auth {
		case AuthBearer:
			h = s.requireToken(h, routeScope(rt))
		case AuthWebSocket:
			h = s.requireTokenOrUpgrade(h, rt.exists)
		}
		h = limitBody(h)
		h = s.cors(h)
		h = secureHeaders(h, rt.transcript)
		mux.Handle(rt.Pattern, h)
	}
	// Anything unmatched still gets the headers (404, 405 from the mux).
	return s.logged(mux, s.checkHost(noStore(secureHeaders(mux, false))))
}

func secureHeaders(next http.Handler, transcript bool) http.Handler {
	csp := cspDefault
	if transcript {
		csp = cspTranscript
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBody {
			writeError(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes", MaxBody)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		next.ServeHTTP(w, r)
	})
}

// bearer returns the request's bearer token and whether it gave one.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", h != ""
	}
	return strings.TrimSpace(tok), true
}

// checkToken answers 401 without a token, 403 with a wrong one or one
// whose scope is below need. It records the scope for the access log.
func (s *Server) checkToken(w http.ResponseWriter, r *http.Request, need Scope) (Scope, bool) {
	tok, given := bearer(r)
	if !given {
		w.Header().Set("WWW-Authenticate", `Bearer realm="pneuma"`)
		writeError(w, http.StatusUnauthorized, "missing Authorization: Bearer token")
		return ScopeNone, false
	}
	sc := s.scopeOf(tok)
	setScope(r, sc)
	switch {
	case sc == ScopeNone:
		writeError(w, http.StatusForbidden, "wrong token")
		return sc, false
	case sc < need:
		writeError(w, http.StatusForbidden, "a %s token cannot do this: it needs the %s scope", sc, need)
		return sc, false
	}
	return sc, true
}

func (s *Server) requireToken(next http.Handler, need Scope) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.checkToken(w, r, need); ok {
			next.ServeHTTP(w, r)
		}
	})
}

// authedKey carries the scope of a WebSocket request whose header already
// authenticated it.
type authedKey struct{}

// requireTokenOrUpgrade authenticates a WebSocket route before anything
// about its session or run is told: a request with a header is checked
// like any route; an upgrade without one must be a valid handshake (else
// 401) and authenticate with its first message before the id is looked up
// (an unknown id is closed with 4004 only then), so that an outsider
// learns nothing of which ids exist.
func (s *Server) requireTokenOrUpgrade(next http.Handler, exists func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, given := bearer(r)
		if !given && isHandshake(r) {
			if exists != nil && !exists(r) {
				s.blindWS(w, r)
				return
			}
			next.ServeHTTP(w, r) // the first message must authenticate
			return
		}
		if sc, ok := s.checkToken(w, r, ScopeRead); ok {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), authedKey{}, sc)))
		}
	})
}

// originAllowed: --allow-origin lists the foreign origins allowed.
func (s *Server) originAllowed(origin string) bool {
	return origin != "" && (slices.Contains(s.cfg.AllowOrigins, "*") || slices.Contains(s.cfg.AllowOrigins, origin))
}

// cors adds CORS headers for allowed foreign origins; without
// --allow-origin there are none and browsers keep other sites out.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); s.originAllowed(o) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", o)
			h.Set("Vary", "Origin")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
			h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r.Header.Get("Origin")) {
		writeError(w, http.StatusForbidden, "origin not allowed")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// console serves the web console's static files (no data, no auth).
func (s *Server) console(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, http.StatusNotFound, "no route %s %s", r.Method, r.URL.Path)
		return
	}
	if s.cfg.Web == nil {
		writeError(w, http.StatusNotFound, "this pneuma has no web console")
		return
	}
	s.cfg.Web.ServeHTTP(w, r)
}
