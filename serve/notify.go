package serve

import (
	"net/url"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/notify"
)

// setupNotify makes the approval links (with a PublicURL) and sends the
// sessions' events to the Notifier besides Config.SessionEvents.
func (s *Server) setupNotify() error {
	if s.cfg.PublicURL != "" {
		l, err := newLinks(s.cfg.StateDir, s.cfg.PublicURL, s.cfg.LinkTTL)
		if err != nil {
			return err
		}
		s.links = l
	}
	if !s.cfg.Notifier.Enabled() {
		return nil
	}
	var link notify.Link
	if s.links != nil {
		link = s.links.mint
	}
	sessions := s.cfg.Notifier.Sessions(link, s.consoleURL("sessions"))
	prev := s.cfg.SessionEvents
	s.cfg.SessionEvents = func(id string, ev SessionEvent) {
		if prev != nil {
			prev(id, ev)
		}
		sessions.Event(id, ev)
	}
	return nil
}

// consoleURL returns the console page of a run or session ("runs",
// "sessions") by id; nil without a PublicURL.
func (s *Server) consoleURL(kind string) func(id string) string {
	if s.cfg.PublicURL == "" {
		return nil
	}
	base := strings.TrimRight(s.cfg.PublicURL, "/")
	return func(id string) string { return base + "/#/" + kind + "/" + url.PathEscape(id) }
}

// ApprovalLinks says whether notifications carry approval links, and for
// how long they work.
func (s *Server) ApprovalLinks() (bool, time.Duration) {
	if s.links == nil {
		return false, 0
	}
	return true, s.links.ttl
}
