package serve

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// Scope is what a token may do. Scopes are ordered: a token of a scope may
// do what the scopes below it may.
type Scope int

const (
	// ScopeNone is no valid token.
	ScopeNone Scope = iota
	// ScopeRead watches: GET routes (but history) and following a session
	// or run over its WebSocket.
	ScopeRead
	// ScopeOperate also starts runs and sessions, sends messages, answers
	// permission requests, interrupts and closes sessions, stops runs.
	ScopeOperate
	// ScopeFull is the operator's token: everything, history included.
	ScopeFull
)

// String is the scope's name, the one the access log shows.
func (s Scope) String() string {
	switch s {
	case ScopeRead:
		return "read"
	case ScopeOperate:
		return "operate"
	case ScopeFull:
		return "full"
	}
	return "-"
}

// Token is one bearer token and its scope. The value is never logged.
type Token struct {
	Scope Scope
	Value string
}

// tokens is the server's tokens: Config.Token (full) and Config.Tokens.
func (s *Server) tokens() []Token {
	out := make([]Token, 0, len(s.cfg.Tokens)+1)
	if s.cfg.Token != "" {
		out = append(out, Token{Scope: ScopeFull, Value: s.cfg.Token})
	}
	for _, t := range s.cfg.Tokens {
		if t.Value != "" {
			out = append(out, t)
		}
	}
	return out
}

// scopeOf is the scope of the token got. Every token is compared, each in
// constant time (hashes first, so that not even the length leaks), and
// the loop does not stop at a match.
func (s *Server) scopeOf(got string) Scope {
	h := sha256.Sum256([]byte(got))
	best := ScopeNone
	for _, t := range s.tokens() {
		w := sha256.Sum256([]byte(t.Value))
		if subtle.ConstantTimeCompare(h[:], w[:]) == 1 && t.Scope > best {
			best = t.Scope
		}
	}
	return best
}

// scopeKey carries the request's scope (the access log and WebSocket
// message checks read it).
type scopeKey struct{}

// setScope records the request's scope where the access log sees it.
func setScope(r *http.Request, sc Scope) {
	if p, ok := r.Context().Value(scopeKey{}).(*Scope); ok {
		*p = sc
	}
}

// routeScope is the scope a route needs unless it says: GET watches; any
// other method acts; history (every transcript of the host's user) is
// the operator's.
func routeScope(rt Route) Scope {
	switch {
	case rt.Scope != ScopeNone:
		return rt.Scope
	case len(rt.Pattern) > 4 && rt.Pattern[:4] == "GET ":
		return ScopeRead
	}
	return ScopeOperate
}

// withScopeSlot gives a request a place for its scope.
func withScopeSlot(ctx context.Context, p *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, p)
}
