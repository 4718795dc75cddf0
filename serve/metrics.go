package serve

import "net/http"

// metrics serves Config.Metrics: every instrument of the server's runs
// and its HTTP traffic in the Prometheus text format. It sits behind the
// bearer token like the API (spend, job names and routes are the
// operator's business); `pneuma serve --metrics-addr` serves the same
// handler on a listener of its own, without a token, and this route then
// answers 404.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, "metrics are not served here")
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}

// Counters count the WebSocket fan-out (telemetry implements them). They
// are called on the hot path and must not block.
type Counters interface {
	// EventsSent counts events written to a WebSocket client.
	EventsSent(n int)
	// ClientDropped counts a client closed with 4008 for lagging.
	ClientDropped()
}

func (s *Server) countSent(n int) {
	if s.cfg.Counters != nil {
		s.cfg.Counters.EventsSent(n)
	}
}

func (s *Server) countDropped() {
	if s.cfg.Counters != nil {
		s.cfg.Counters.ClientDropped()
	}
}

// sessionEvent shows a session's event to Config.SessionEvents.
func (c *Config) sessionEvent(id string, ev SessionEvent) {
	if c.SessionEvents != nil {
		c.SessionEvents(id, ev)
	}
}
