package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// TestAuthEveryRoute walks the route table itself: every route but the
// public ones answers 401 without a token and 403 with a wrong one, so a
// route added without auth fails here.
func TestAuthEveryRoute(t *testing.T) {
	b := newBed(t, nil)
	for _, rt := range b.s.Routes() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = strings.NewReplacer("{id}", "x1", "{request_id}", "r1", "{job}", "j1", "{token}", "t1", "{$}", "").Replace(path)
		t.Run(rt.Pattern, func(t *testing.T) {
			for _, tc := range []struct {
				token string
				want  int
			}{{"", http.StatusUnauthorized}, {"wrong", http.StatusForbidden}} {
				resp := b.doToken(tc.token, method, path, "", nil)
				got := resp.StatusCode
				if rt.Auth == AuthNone {
					// A preflight from no allowed origin and an approval
					// link whose token (in the path) is not the server's
					// are refused with 403; no bearer token is asked.
					forbiddenOK := method == "OPTIONS" || strings.HasPrefix(path, "/approve/")
					if got == http.StatusUnauthorized || got == http.StatusForbidden && !forbiddenOK {
						t.Errorf("public route with token %q: %d", tc.token, got)
					}
					continue
				}
				if got != tc.want {
					t.Errorf("token %q: %d, want %d", tc.token, got, tc.want)
				}
				for h, want := range map[string]string{"Content-Security-Policy": "", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
					if v := resp.Header.Get(h); v == "" || want != "" && v != want {
						t.Errorf("header %s = %q", h, v)
					}
				}
			}
		})
	}
	var h map[string]string
	if resp := b.doToken("", "GET", "/healthz", "", &h); resp.StatusCode != 200 || h["status"] != "ok" {
		t.Fatalf("/healthz: %d %v", resp.StatusCode, h)
	}
}

func TestHeaders(t *testing.T) {
	b := newBed(t, nil)
	resp := b.do("GET", "/api/sessions", "", nil)
	if got := resp.Header.Get("Content-Security-Policy"); got != cspDefault {
		t.Errorf("CSP %q", got)
	}
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("CORS without --allow-origin: %q", got)
	}
	for _, rt := range b.s.Routes() {
		if rt.transcript != strings.Contains(rt.Pattern, "transcript") && !strings.HasPrefix(rt.Pattern, "GET /api/history/sessions/") {
			t.Errorf("%s: transcript CSP %v", rt.Pattern, rt.transcript)
		}
	}
}

func TestBodyLimitsAndStrictDecoding(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	big := `{"content":"` + strings.Repeat("x", MaxBody) + `"}`
	var e apiError
	if resp := b.do("POST", "/api/sessions/"+id+"/messages", big, &e); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB body: %d, want 413", resp.StatusCode)
	}
	tests := []struct {
		path, body, field string
	}{
		{"/api/sessions", `{"repo":"x","modle":"opus"}`, "modle"},
		{"/api/sessions", `{"policy":{"alow":["Read"]}}`, "policy.alow"},
		{"/api/sessions", `{"max_turns":"three"}`, "max_turns"},
		{"/api/sessions", `{"permission_mode":"yolo"}`, "permission_mode"},
		// Job fields a session cannot honour are refused by name (docs/serve.md).
		{"/api/sessions", `{"verify":{"command":["make"]}}`, "verify"},
		{"/api/sessions", `{"retries":2}`, "retries"},
		{"/api/sessions", `{"prompts":["hi"]}`, "prompts"},
		{"/api/sessions", `{"expect":{"changes":true}}`, "expect"},
		{"/api/sessions", `{"output_schema":{"type":"object"}}`, "output_schema"},
		{"/api/sessions", `{"push":true}`, "push"},
		{"/api/sessions", `{"pull_request":{"title":"x"}}`, "pull_request"},
		{"/api/sessions/" + id + "/messages", `{"content":"hi","colour":1}`, "colour"},
		{"/api/sessions/" + id + "/permissions/req-1", `{"behavior":"maybe"}`, "behavior"},
		{"/api/runs", `{"jobs_yaml":"x","extra":true}`, "extra"},
	}
	for _, tt := range tests {
		var e apiError
		resp := b.do("POST", tt.path, tt.body, &e)
		if resp.StatusCode != 400 || len(e.Problems) == 0 || e.Problems[0].Field != tt.field {
			t.Errorf("POST %s %s: %d %+v, want 400 naming %s", tt.path, tt.body, resp.StatusCode, e, tt.field)
		}
	}
	// Every problem at once.
	resp := b.do("POST", "/api/sessions", `{"modle":"x","max_turns":-1,"permission_prompt":"server"}`, &e)
	if resp.StatusCode != 400 || len(e.Problems) != 3 {
		t.Errorf("three problems: %d %+v", resp.StatusCode, e.Problems)
	}
}

// One decode error, two sources: a run request's own fields are an "invalid
// run" at the field's name, its jobs file's problems an "invalid jobs file"
// at file:line:col; both are jobfile.DecodeError inside and the same
// {field, message} outside.
func TestRunDecodeProblems(t *testing.T) {
	b := newBed(t, nil)
	tests := []struct{ body, err, field, msg string }{
		{`{}`, "invalid run", "jobs_file", "give exactly one of jobs_file and jobs_yaml"},
		{`{"jobs_file":"a.yaml","jobs_yaml":"version: 1"}`, "invalid run", "jobs_file", "give exactly one of jobs_file and jobs_yaml"},
		{`{"jobs_yaml":"version: 1\nconcurency: 2\njobs: [{name: a, prompt: p}]\n"}`, "invalid jobs file", ":2:1", `unknown field "concurency" (did you mean "concurrency"?)`},
	}
	for _, tt := range tests {
		var e apiError
		resp := b.do("POST", "/api/runs", tt.body, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error != tt.err || len(e.Problems) != 1 ||
			!strings.HasSuffix(e.Problems[0].Field, tt.field) || e.Problems[0].Message != tt.msg {
			t.Errorf("POST /api/runs %s: %d %+v, want 400 %q with %s: %s", tt.body, resp.StatusCode, e, tt.err, tt.field, tt.msg)
		}
	}
}

func TestMaxSessions(t *testing.T) {
	b := newBed(t, func(c *Config) { c.MaxSessions = 2 })
	b.createSession()
	id := b.createSession()
	var e apiError
	resp := b.do("POST", "/api/sessions", `{}`, &e)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third session: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// A closed session frees its slot.
	var o sessionObject
	if resp := b.do("DELETE", "/api/sessions/"+id, "", &o); resp.StatusCode != 200 || o.Status != StatusClosed || o.FilesChanged == nil || *o.FilesChanged != 2 {
		t.Fatalf("delete: %d %+v", resp.StatusCode, o)
	}
	b.createSession()
}

func TestOutsideRoots(t *testing.T) {
	b := newBed(t, nil)
	if resp := b.do("POST", "/api/sessions", `{"repo":"/outside"}`, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("session outside roots: %d", resp.StatusCode)
	}
	if resp := b.do("POST", "/api/runs", `{"jobs_file":"/etc/hostname"}`, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("run outside roots: %d", resp.StatusCode)
	}
}

func TestClientMsgIDOnce(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	var a, c map[string]int64
	b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"hello","client_msg_id":"m1"}`, &a)
	resp := b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"hello","client_msg_id":"m1"}`, &c)
	if resp.StatusCode != 202 || a["seq"] != 1 || c["seq"] != a["seq"] {
		t.Fatalf("twice: %d %v %v", resp.StatusCode, a, c)
	}
	if sent := b.engine.last().Sent(); len(sent) != 1 {
		t.Fatalf("sent %v, want one turn", sent)
	}
}

func TestMessageWait(t *testing.T) {
	b := newBed(t, nil)
	gate := make(chan struct{})
	b.engine.mu.Lock()
	b.engine.gate = gate
	b.engine.mu.Unlock()
	id := b.createSession()
	b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"first"}`, nil)
	// The first turn answers only once the second message is queued, so its
	// reply lands in the log after the second user_message.
	go func() {
		poll.Until(5*time.Second, func() bool { return len(b.engine.last().Sent()) == 2 })
		close(gate)
	}()
	var out struct {
		Seq    int64             `json:"seq"`
		Events []json.RawMessage `json:"events"`
		Result map[string]any    `json:"result"`
	}
	resp := b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"second","wait":true}`, &out)
	if resp.StatusCode != 200 || out.Result["type"] != "result" {
		t.Fatalf("wait: %d %+v", resp.StatusCode, out)
	}
	var first map[string]any
	json.Unmarshal(out.Events[0], &first)
	if first["type"] != "user_message" || first["content"] != "second" || int64(first["seq"].(float64)) != out.Seq {
		t.Fatalf("first event of the turn: %v", first)
	}
	for _, ev := range out.Events {
		if strings.Contains(string(ev), `"re: first"`) {
			t.Fatalf("the events of another turn: %s", ev)
		}
	}
}

// A turn that runner cuts (a timeout) has no result: waiting for it ends
// at its turn_end, and the next turn is still told apart.
func TestMessageWaitCutTurn(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	var out struct {
		Result map[string]any `json:"result"`
	}
	resp := b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"too slow","wait":true}`, &out)
	if resp.StatusCode != 200 || out.Result["type"] != "turn_end" || out.Result["reason"] != "timeout" {
		t.Fatalf("wait for a cut turn: %d %+v", resp.StatusCode, out)
	}
	resp = b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"next","wait":true}`, &out)
	if resp.StatusCode != 200 || out.Result["type"] != "result" {
		t.Fatalf("wait for the next turn: %d %+v", resp.StatusCode, out)
	}
}

func TestLongPoll(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	var p pollPage
	start := time.Now()
	b.do("GET", "/api/sessions/"+id+"/events?after=0&wait=200ms", "", &p)
	if len(p.Events) != 0 || p.NextAfter != 0 || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("empty wait: %+v after %v", p, time.Since(start))
	}
	// The message comes while the poll waits: only the log's wake-up can
	// answer the poll with it (its timeout answers with no events).
	log := b.s.sessions.get(id).log
	go func() {
		if poll.Until(10*time.Second, func() bool { return log.Waiting() == 1 }) {
			b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"hi"}`, nil)
		}
	}()
	b.do("GET", "/api/sessions/"+id+"/events?after=0&wait=10s", "", &p)
	evs := p.Events
	if len(evs) == 0 || evs[0]["seq"].(float64) != 1 || evs[0]["type"] != "user_message" || p.NextAfter != int64(evs[len(evs)-1]["seq"].(float64)) {
		t.Fatalf("events: %+v", p)
	}
	var e apiError
	if resp := b.do("GET", "/api/sessions/"+id+"/events?after=-3", "", &e); resp.StatusCode != 400 || e.Problems[0].Field != "after" {
		t.Fatalf("bad after: %d %+v", resp.StatusCode, e)
	}
}

func TestHealth(t *testing.T) {
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-secret", "CLAUDE_CODE_OAUTH_TOKEN": "oauth-secret"}
	b := newBed(t, func(c *Config) { c.Getenv = func(k string) string { return env[k] }; c.Version = "1.2.3" })
	var h map[string]any
	resp := b.do("GET", "/api/health", "", &h)
	raw, _ := json.Marshal(h)
	if resp.StatusCode != 200 || h["version"] != "1.2.3" || h["max_sessions"].(float64) != 4 {
		t.Fatalf("health: %s", raw)
	}
	if strings.Contains(string(raw), "secret") || !strings.Contains(string(raw), "API key") {
		t.Fatalf("health leaks or lacks the warning: %s", raw)
	}
}

func TestRestart(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	var r map[string]any
	b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"one","client_msg_id":"c1","wait":true}`, &r)
	// The wait ends at the result; turn_end and the status change follow it.
	var before sessionObject
	poll.Eventually(t, 10*time.Second, func() bool {
		b.do("GET", "/api/sessions/"+id, "", &before)
		return before.Status == StatusIdle
	}, "the session never went idle after its turn")
	b.stop()

	b2 := startBed(t, b.cfg)
	var list []sessionObject
	b2.do("GET", "/api/sessions", "", &list)
	if len(list) != 1 || list[0].ID != id || list[0].Status != StatusIdle || list[0].LastSeq != before.LastSeq || before.LastSeq < 4 {
		t.Fatalf("after restart: %+v (before %+v)", list, before)
	}
	var p pollPage
	b2.do("GET", "/api/sessions/"+id+"/events?after=2", "", &p)
	evs := p.Events
	if int64(len(evs)) != before.LastSeq-2 || evs[0]["seq"].(float64) != 3 || p.LastSeq != before.LastSeq {
		t.Fatalf("replay after restart: %v", evs)
	}
	// The same client_msg_id is still the same message; a new one resumes.
	var m map[string]int64
	b2.do("POST", "/api/sessions/"+id+"/messages", `{"content":"one","client_msg_id":"c1"}`, &m)
	if m["seq"] != 1 || b2.engine.restores != 0 {
		t.Fatalf("dedup across restart: %v, restores %d", m, b2.engine.restores)
	}
	b2.do("POST", "/api/sessions/"+id+"/messages", `{"content":"two"}`, &m)
	if m["seq"] != before.LastSeq+1 || b2.engine.restores != 1 {
		t.Fatalf("next message: %v (last %d), restores %d", m, before.LastSeq, b2.engine.restores)
	}
}

// pollPage is a long poll's answer.
type pollPage struct {
	Events    []map[string]any `json:"events"`
	NextAfter int64            `json:"next_after"`
	LastSeq   int64            `json:"last_seq"`
}
