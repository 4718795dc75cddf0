package serve

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/runner"
)

// askEngine opens askSessions, which ask for permissions on demand and
// record the answers.
type askEngine struct {
	mu       sync.Mutex
	sessions []*askSession
}

func (f *askEngine) Open(ctx context.Context, spec *SessionSpec, o SessionOptions) (Session, error) {
	s := &askSession{o: o, st: SessionState{ID: o.ID, Name: spec.Job.Name, Status: StatusIdle, Repo: spec.Job.Repo, Model: "claude-test"}}
	f.mu.Lock()
	f.sessions = append(f.sessions, s)
	f.mu.Unlock()
	return s, nil
}

type askSession struct {
	o       SessionOptions
	mu      sync.Mutex
	st      SessionState
	answers []PermissionDecision
}

// ask makes a pending request and tells the server, as runner does.
func (s *askSession) ask(id, tool string, input string) {
	p := PendingPermission{RequestID: id, ToolName: tool, Input: json.RawMessage(input), ToolUseID: "tu-" + id}
	s.mu.Lock()
	s.st.PendingPermissions = append(s.st.PendingPermissions, p)
	s.st.Status = StatusWaitingPermission
	s.mu.Unlock()
	b, _ := json.Marshal(p)
	s.o.OnEvent(SessionEvent{Type: "permission_request", Data: b})
}

func (s *askSession) Answer(id string, d PermissionDecision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.st.PendingPermissions {
		if p.RequestID == id {
			s.st.PendingPermissions = append(s.st.PendingPermissions[:i], s.st.PendingPermissions[i+1:]...)
			s.answers = append(s.answers, d)
			return nil
		}
	}
	return ErrPermissionResolved
}

func (s *askSession) decisions() []PermissionDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]PermissionDecision(nil), s.answers...)
}

func (s *askSession) Send(string) error   { return nil }
func (s *askSession) Interrupt() error    { return nil }
func (s *askSession) State() SessionState { s.mu.Lock(); defer s.mu.Unlock(); return s.st }
func (s *askSession) Close(context.Context) (SessionSummary, error) {
	return SessionSummary{State: s.State()}, nil
}
func (s *askSession) Shutdown(context.Context) error { return nil }

func (s *askSession) SetModel(context.Context, string) (ControlAck, error) {
	return ControlAck{Pending: true}, nil
}

func (s *askSession) SetPermissionMode(context.Context, string) (ControlAck, error) {
	return ControlAck{Pending: true}, nil
}

// linkBed is a server with a PublicURL (its own address) and a notifier
// sending json to a loopback receiver.
type linkBed struct {
	*bed
	engine *askEngine
	hooks  chan notify.Notification
}

func newLinkBed(t *testing.T, ttl time.Duration) *linkBed {
	t.Helper()
	lb := &linkBed{engine: &askEngine{}, hooks: make(chan notify.Notification, 16)}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notify.Notification
		_ = json.NewDecoder(r.Body).Decode(&n)
		lb.hooks <- n
	}))
	t.Cleanup(recv.Close)
	n, err := notify.New([]notify.Target{{URL: recv.URL, Events: []string{notify.EventPermissionRequest}}}, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	cfg := Config{Token: testToken, StateDir: t.TempDir(), WorkDir: t.TempDir(), Engine: lb.engine,
		Getenv: func(string) string { return "" }, Notifier: n, PublicURL: ts.URL + "/", LinkTTL: ttl}
	cfg.Roots = []string{cfg.WorkDir}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h = s.Handler()
	lb.bed = &bed{t: t, s: s, ts: ts, cfg: cfg}
	t.Cleanup(lb.stop)
	return lb
}

// askFor creates a session, makes it ask, and returns the session and
// the notification's approval link.
func (lb *linkBed) askFor(req, tool, input string) (*askSession, string) {
	lb.t.Helper()
	lb.createSession()
	s := lb.engine.sessions[len(lb.engine.sessions)-1]
	s.ask(req, tool, input)
	select {
	case n := <-lb.hooks:
		if n.Permission == nil || n.Permission.ApproveURL == "" || n.Permission.ExpiresAt == nil {
			lb.t.Fatalf("notification without a link: %+v", n)
		}
		return s, n.Permission.ApproveURL
	case <-time.After(10 * time.Second):
		lb.t.Fatal("no notification")
	}
	return nil, ""
}

type page struct {
	status int
	body   string
}

func get(t *testing.T, link string) page {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, string(b)}
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// post sends the page's form as a browser would from the page.
func post(t *testing.T, link string, form url.Values, origin string) page {
	t.Helper()
	req, _ := http.NewRequest("POST", link, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return page{resp.StatusCode, string(b)}
}

func formOf(t *testing.T, p page, decision string) url.Values {
	t.Helper()
	m := csrfRe.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no csrf in the page:\n%s", p.body)
	}
	return url.Values{"csrf": {m[1]}, "decision": {decision}}
}

func TestLinkAllowsOnceFromThePage(t *testing.T) {
	lb := newLinkBed(t, 0)
	s, link := lb.askFor("req-w", "Write", `{"file_path":"notes.txt","content":"hello\nworld"}`)
	origin := lb.ts.URL
	p := get(t, link)
	if p.status != 200 || !strings.Contains(p.body, `id="tool">Write`) || !strings.Contains(p.body, "notes.txt") ||
		!strings.Contains(p.body, `<span class="diff-add">+ hello</span>`) || !strings.Contains(p.body, "claude-test") {
		t.Fatalf("page %d:\n%s", p.status, p.body)
	}
	// Looking decides nothing.
	get(t, link)
	if len(s.decisions()) != 0 {
		t.Fatal("a GET decided")
	}
	form := formOf(t, p, "allow")
	if got := post(t, link, form, origin); got.status != 200 || !strings.Contains(got.body, "Allowed.") {
		t.Fatalf("allow: %d %s", got.status, got.body)
	}
	d := s.decisions()
	if len(d) != 1 || d[0].Behavior != "allow" || d[0].By != runner.ByLink || len(d[0].UpdatedInput) != 0 {
		t.Fatalf("decisions %+v", d)
	}
	for name, p := range map[string]page{"replay": post(t, link, form, origin), "page again": get(t, link)} {
		if p.status != http.StatusGone || !strings.Contains(p.body, "used already") {
			t.Errorf("%s: %d %s", name, p.status, p.body)
		}
	}
	if len(s.decisions()) != 1 {
		t.Fatal("the replay decided")
	}
}

func TestLinkDenyAndEdit(t *testing.T) {
	lb := newLinkBed(t, 0)
	s, link := lb.askFor("req-e", "Edit", `{"file_path":"a.go","old_string":"x := 1","new_string":"x := 2"}`)
	p := get(t, link)
	if !strings.Contains(p.body, `<span class="diff-del">- x := 1</span>`) || !strings.Contains(p.body, `<span class="diff-add">+ x := 2</span>`) {
		t.Fatalf("diff:\n%s", p.body)
	}
	form := formOf(t, p, "edit")
	form.Set("updated_input", `not json`)
	if got := post(t, link, form, ""); got.status != 400 || !strings.Contains(got.body, "not a JSON object") {
		t.Fatalf("bad edit: %d %s", got.status, got.body)
	}
	form.Set("updated_input", `{"file_path":"a.go","old_string":"x := 1","new_string":"x := 3"}`)
	if got := post(t, link, form, ""); got.status != 200 {
		t.Fatalf("edit: %d %s", got.status, got.body)
	}
	if d := s.decisions(); len(d) != 1 || d[0].Behavior != "allow" || !strings.Contains(string(d[0].UpdatedInput), "x := 3") {
		t.Fatalf("decisions %+v", d)
	}

	s2, link2 := lb.askFor("req-d", "Bash", `{"command":"curl -H 'Authorization: Bearer sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789' x"}`)
	p = get(t, link2)
	if strings.Contains(p.body, "sk-ant-api03") || strings.Contains(p.body, `value="edit"`) {
		t.Fatalf("a secret on the page, or an edit of redacted input offered:\n%s", p.body)
	}
	if got := post(t, link2, formOf(t, p, "deny"), ""); got.status != 200 || !strings.Contains(got.body, "Denied.") {
		t.Fatalf("deny: %d %s", got.status, got.body)
	}
	if d := s2.decisions(); len(d) != 1 || d[0].Behavior != "deny" || d[0].By != runner.ByLink {
		t.Fatalf("decisions %+v", d)
	}
}

func TestLinkRefusals(t *testing.T) {
	lb := newLinkBed(t, time.Minute)
	s, link := lb.askFor("req-1", "Write", `{"file_path":"f","content":"c"}`)
	p := get(t, link)
	form := formOf(t, p, "allow")
	u, _ := url.Parse(link)
	tok := strings.TrimPrefix(u.Path, "/approve/")
	payload, sig, _ := strings.Cut(tok, ".")
	flip := func(s string) string {
		b := []byte(s)
		if b[3] == 'A' {
			b[3] = 'B'
		} else {
			b[3] = 'A'
		}
		return string(b)
	}
	cases := []struct {
		name   string
		do     func() page
		status int
		want   string
	}{
		{"tampered payload", func() page { return get(t, lb.ts.URL+"/approve/"+flip(payload)+"."+sig) }, 403, "not made by this server"},
		{"tampered signature", func() page { return post(t, lb.ts.URL+"/approve/"+payload+"."+flip(sig), form, "") }, 403, "not made by this server"},
		{"garbage", func() page { return get(t, lb.ts.URL+"/approve/nonsense") }, 403, "not made by this server"},
		{"foreign origin", func() page { return post(t, link, form, "https://evil.example") }, 403, "not sent from the approval page"},
		{"opaque origin", func() page { return post(t, link, form, "null") }, 403, "not sent from the approval page"},
		{"no csrf", func() page { return post(t, link, url.Values{"decision": {"allow"}}, "") }, 403, "not sent from the approval page"},
		{"json body", func() page {
			req, _ := http.NewRequest("POST", link, strings.NewReader(`{"decision":"allow"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return page{status: resp.StatusCode, body: "not sent from the approval page"}
		}, 403, "not sent from the approval page"},
	}
	for _, c := range cases {
		if got := c.do(); got.status != c.status || !strings.Contains(got.body, c.want) {
			t.Errorf("%s: %d %s", c.name, got.status, got.body)
		}
	}
	if len(s.decisions()) != 0 {
		t.Fatal("a refused link decided")
	}
	// Expired: the same link an hour later.
	setLinkClock(lb.s, func() time.Time { return time.Now().Add(time.Hour) })
	for name, got := range map[string]page{"get": get(t, link), "post": post(t, link, form, "")} {
		if got.status != http.StatusGone || !strings.Contains(got.body, "expired") {
			t.Errorf("expired %s: %d %s", name, got.status, got.body)
		}
	}
	setLinkClock(lb.s, time.Now)
	// A link of another server (another key) for the same ids.
	other := &links{key: []byte("another server's key, 32 bytes!"), ttl: time.Minute, public: lb.ts.URL, now: time.Now}
	foreign, _ := other.mint(s.st.ID, "req-1")
	if got := get(t, foreign); got.status != 403 {
		t.Errorf("foreign: %d %s", got.status, got.body)
	}
	// Answered elsewhere (the console): the link has nothing to decide.
	if err := s.Answer("req-1", PermissionDecision{Behavior: "deny"}); err != nil {
		t.Fatal(err)
	}
	if got := post(t, link, form, ""); got.status != http.StatusConflict || !strings.Contains(got.body, "answered already") {
		t.Errorf("answered: %d %s", got.status, got.body)
	}
}

func TestLinkKeyFile(t *testing.T) {
	dir := t.TempDir()
	l, err := newLinks(dir, "https://p.example", 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, linkKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi.Mode(), err)
	}
	again, err := newLinks(dir, "https://p.example", 0)
	if err != nil || string(again.key) != string(l.key) || l.ttl != DefaultLinkTTL {
		t.Fatalf("the key changed across restarts: %v", err)
	}
	link, _ := l.mint("s", "r")
	if _, err := again.parse(strings.TrimPrefix(link, "https://p.example/approve/")); err != nil {
		t.Fatalf("a restarted server refuses its link: %v", err)
	}
	if err := os.Chmod(filepath.Join(dir, linkKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := newLinks(dir, "https://p.example", 0); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("a readable key file was accepted: %v", err)
	}
}

func TestNoLinksWithoutPublicURL(t *testing.T) {
	b := newBed(t, nil)
	if ok, _ := b.s.ApprovalLinks(); ok {
		t.Fatal("links without a public URL")
	}
	resp, err := http.Get(b.ts.URL + "/approve/x.y")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), "no --public-url") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
