package serve

import "time"

// SetLinkClock moves the clock of s's approval links (for the end-to-end
// tests of expired links).
func SetLinkClock(s *Server, now func() time.Time) { setLinkClock(s, now) }

func setLinkClock(s *Server, now func() time.Time) {
	s.links.mu.Lock()
	defer s.links.mu.Unlock()
	s.links.now = now
}
