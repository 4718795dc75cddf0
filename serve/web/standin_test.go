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

	"golang.org/x/net/websocket"

	"github.com/pneuma-cli/pneuma/serve/web"
)

// The stand-in is a scripted imitation of pneuma serve's API (issue 12) with
// the real console handler at /. It is a temporary harness: once the server
// is merged, startConsole returns the real one and the scenarios below come
// from real runs and sessions of the CLI against the fake Anthropic API.

// xss is what a hostile model or tool might write: it must show as text.
const xss = `<script>window.__xss=1</script><img src=x onerror="window.__xss=1">`

// standIn serves web.Handler and a scripted API on 127.0.0.1.
type standIn struct {
	t     *testing.T
	token string
	addr  string

	mu       sync.Mutex
	srv      *http.Server
	conns    map[*websocket.Conn]bool
	logs     map[string]*eventLog // "runs/ID" or "sessions/ID"
	reports  map[string]map[string]any
	got      []map[string]any // client messages received over WebSockets
	subs     []int            // last_seq of every subscribe, in order
	sessions map[string]map[string]any
	down     bool
}

// eventLog is one stream of events with its seq counter and live listeners.
type eventLog struct {
	events []map[string]any
	subs   map[chan map[string]any]bool
}

// startStandIn serves the console and the stand-in API until the test ends.
func startStandIn(t *testing.T) *standIn {
	s := &standIn{t: t, token: "test-token-" + fmt.Sprint(time.Now().UnixNano()),
		conns: map[*websocket.Conn]bool{}, logs: map[string]*eventLog{}, reports: map[string]map[string]any{},
		sessions: map[string]map[string]any{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *standIn) URL() string   { return "http://" + s.addr }
func (s *standIn) Token() string { return s.token }

func (s *standIn) serve(ln net.Listener) {
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	mux.Handle("/api/", s.auth(http.HandlerFunc(s.api)))
	mux.Handle("/api/sessions/{id}/ws", s.ws("sessions"))
	mux.Handle("/api/runs/{id}/ws", s.ws("runs"))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	go srv.Serve(ln)
}

func (s *standIn) stop() {
	s.mu.Lock()
	srv := s.srv
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	srv.Close()
}

// Restart drops every connection, stays down for d (while during runs),
// then listens again on the same address, as a restarted server would.
func (s *standIn) Restart(d time.Duration, during func()) {
	s.stop()
	s.mu.Lock()
	s.down = true
	s.mu.Unlock()
	if during != nil {
		during()
	}
	time.Sleep(d)
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.mu.Lock()
	s.down = false
	s.mu.Unlock()
	s.serve(ln)
}

func (s *standIn) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// emit appends an event to a log with the next seq and hands it to every
// live subscriber.
func (s *standIn) emit(key string, ev map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.log(key)
	ev["seq"] = len(l.events) + 1
	ev["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	l.events = append(l.events, ev)
	for ch := range l.subs {
		ch <- ev
	}
}

func (s *standIn) log(key string) *eventLog {
	l := s.logs[key]
	if l == nil {
		l = &eventLog{subs: map[chan map[string]any]bool{}}
		s.logs[key] = l
	}
	return l
}

// lastSeq is the seq of a log's newest event.
func (s *standIn) lastSeq(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log(key).events)
}

// received returns the client messages of a type received so far.
func (s *standIn) received(typ string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, m := range s.got {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

func (s *standIn) subscribes() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.subs...)
}

// ws serves a stream's WebSocket: auth first, then subscribe {last_seq}.
// On a subscribe it replays from two events before last_seq (an at-least-once
// server: the console must drop what it has already shown), then streams live.
func (s *standIn) ws(kind string) http.Handler {
	return websocket.Server{Handler: func(c *websocket.Conn) {
		key := kind + "/" + c.Request().PathValue("id")
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
		var first map[string]any
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := websocket.JSON.Receive(c, &first); err != nil || first["type"] != "auth" || first["token"] != s.token {
			return
		}
		c.SetReadDeadline(time.Time{})
		out := make(chan map[string]any, 1024)
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case ev := <-out:
					if websocket.JSON.Send(c, ev) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
		subscribed := false
		defer func() {
			s.mu.Lock()
			delete(s.log(key).subs, out)
			s.mu.Unlock()
		}()
		for {
			var m map[string]any
			if err := websocket.JSON.Receive(c, &m); err != nil {
				return
			}
			s.mu.Lock()
			s.got = append(s.got, m)
			if m["type"] == "subscribe" && !subscribed {
				subscribed = true
				last, _ := m["last_seq"].(float64)
				s.subs = append(s.subs, int(last))
				l := s.log(key)
				for _, ev := range l.events[max(0, int(last)-2):] {
					out <- ev
				}
				l.subs[out] = true
			}
			s.mu.Unlock()
			if m["type"] == "ping" {
				out <- map[string]any{"type": "pong"}
			}
			if kind == "sessions" {
				s.sessionMessage(key, m)
			}
		}
	}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// api routes the stand-in's HTTP API.
func (s *standIn) api(w http.ResponseWriter, r *http.Request) {
	p := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/"), "/"), "/")
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/runs":
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		id := fmt.Sprintf("run-%d", len(s.reports)+1)
		s.mu.Lock()
		s.reports[id] = map[string]any{"schema": "pneuma.report/v1", "run_id": id, "status": "running", "jobs": []any{}, "totals": map[string]any{"jobs": 3}}
		s.mu.Unlock()
		go s.playRun(id, 150*time.Millisecond)
		writeJSON(w, 201, map[string]any{"id": id})
	case r.Method == "GET" && r.URL.Path == "/api/runs":
		s.mu.Lock()
		var list []any
		for _, rep := range s.reports {
			list = append(list, rep)
		}
		s.mu.Unlock()
		writeJSON(w, 200, list)
	case r.Method == "GET" && len(p) == 2 && p[0] == "runs":
		s.mu.Lock()
		rep, ok := s.reports[p[1]]
		var b []byte
		if ok {
			b, _ = json.Marshal(rep)
		}
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case r.Method == "DELETE" && len(p) == 2 && p[0] == "runs":
		w.WriteHeader(202)
	case len(p) == 5 && p[0] == "runs" && p[2] == "jobs":
		s.jobFile(w, p[3], p[4])
	default:
		s.sessionsAPI(w, r, p)
	}
}

func (s *standIn) jobFile(w http.ResponseWriter, job, what string) {
	switch what {
	case "stream":
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprintf(w, `{"type":"system","subtype":"init","model":"claude-sonnet-4-5"}`+"\n")
		fmt.Fprintf(w, `{"type":"assistant","message":{"content":[{"type":"text","text":"Fixing %s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}`+"\n", job)
		fmt.Fprintf(w, `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":%q}]}}`+"\n", "ok "+xss)
		fmt.Fprintf(w, `{"type":"result","subtype":"success","num_turns":3,"total_cost_usd":0.0123,"result":"Done."}`+"\n")
	case "diff":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "diff --git a/main.go b/main.go\nindex 1111111..2222222 100644\n--- a/main.go\n+++ b/main.go\n@@ -1,4 +1,4 @@\n package main\n \n-// old "+xss+"\n+// new comment\n func main() {}\n")
	case "transcript":
		transcript(w)
	}
}

// transcript is an exported transcript gone wrong: raw script and an
// onerror image, which the console's sandboxed frame must never run.
func transcript(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	fmt.Fprint(w, `<!doctype html><html lang="en"><head><title>Transcript</title></head><body><h1>Transcript</h1>`+
		`<p>User: please fix it</p><p>Assistant: &lt;script&gt;window.__xss=1&lt;/script&gt; is shown as text</p>`+
		`<script>window.top.__xss=1;parent.__xss=1</script><img src=x onerror="top.__xss=1"></body></html>`)
}
