package web_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pneuma-cli/pneuma/internal/testbed/browser"
	"github.com/pneuma-cli/pneuma/serve/web"
)

// watchServer serves the console and the session and run lists, which the
// test changes as a server's state would.
type watchServer struct {
	token, addr string
	mu          sync.Mutex
	sessions    []map[string]any
	runs        []map[string]any
}

func (s *watchServer) URL() string   { return "http://" + s.addr }
func (s *watchServer) Token() string { return s.token }

func (s *watchServer) set(sessions, runs []map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions, s.runs = sessions, runs
}

func startWatchServer(t *testing.T) *watchServer {
	s := &watchServer{token: "watch-token-" + fmt.Sprint(time.Now().UnixNano()), sessions: []map[string]any{}, runs: []map[string]any{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, `{"error":"missing Authorization: Bearer token"}`, http.StatusUnauthorized)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/sessions":
			_ = json.NewEncoder(w).Encode(s.sessions)
		case "/api/runs":
			_ = json.NewEncoder(w).Encode(s.runs)
		default:
			http.NotFound(w, r)
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// stubNotification replaces the browser's Notification with one that
// records what would be shown and the permission asks, starting from
// permission (default, granted or denied).
func stubNotification(p page, permission string) {
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__notes = []; window.__asks = 0;
window.Notification = class {
  constructor(title, opts) { window.__notes.push(title + ' | ' + opts.tag); }
  close() {}
  static requestPermission() { window.__asks++; window.Notification.permission = 'granted'; return Promise.resolve('granted'); }
};
window.Notification.permission = %q;`, permission)))
}

func pending(id, name, req, tool string) map[string]any {
	return map[string]any{"id": id, "name": name, "status": "waiting_permission",
		"pending_permissions": []map[string]any{{"request_id": req, "tool_name": tool, "input": map[string]any{}}}}
}

// TestConsoleNotifiesWhileOpen: the title counts the waiting permission
// requests; with notifications allowed, a new request and a finished run
// each show one notification; the browser is asked only from the button,
// once.
func TestConsoleNotifiesWhileOpen(t *testing.T) {
	srv := startWatchServer(t)
	srv.set(nil, []map[string]any{{"id": "run-1", "status": "running", "jobs_total": 2}})
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "#/runs")
	p.wait(`document.getElementById('notify-on') !== null`, "the notifications button")
	stubNotification(p, "default")
	p.do(chromedp.Click(chromedp.CSS("#notify-on")))
	p.wait(`window.__asks === 1 && document.getElementById('notify-on') === null`, "one ask from the click, then no button")

	srv.set([]map[string]any{pending("s1", "greeter", "r1", "Write"), pending("s2", "", "r2", "Bash")},
		[]map[string]any{{"id": "run-1", "status": "running", "jobs_total": 2}})
	p.wait(`document.title.startsWith('(2) ')`, "two waiting in the title")
	p.wait(`window.__notes.length === 2`, "two notifications")
	notes := eval[[]string](p, `window.__notes`)
	if !strings.Contains(strings.Join(notes, "\n"), "greeter asks to use Write | #/sessions/s1") {
		t.Errorf("notifications %q", notes)
	}

	srv.set([]map[string]any{pending("s2", "", "r2", "Bash")}, []map[string]any{{"id": "run-1", "status": "failed", "jobs_total": 2, "spent_usd": 1.5}})
	p.wait(`document.title.startsWith('(1) ')`, "one waiting in the title")
	p.wait(`window.__notes.length === 3`, "the finished run's notification")
	if last := eval[string](p, `window.__notes[2]`); last != "Run run-1 failed | #/runs/run-1" {
		t.Errorf("run notification %q", last)
	}
	srv.set(nil, []map[string]any{{"id": "run-1", "status": "failed", "jobs_total": 2}})
	p.wait(`!/^\(\d+\) /.test(document.title)`, "no count in the title")
	if n := eval[int](p, `window.__notes.length`); n != 3 {
		t.Errorf("%d notifications after nothing new, want 3", n)
	}
}
