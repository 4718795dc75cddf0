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
