package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pneuma-cli/pneuma/internal/testbed/browser"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/serve"
	"github.com/pneuma-cli/pneuma/serve/web"
)

// hookReceiver is a loopback webhook receiver: it checks each delivery's
// signature and keeps the notifications.
type hookReceiver struct {
	*httptest.Server
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	got    []notify.Notification
}

func newHookReceiver(t *testing.T, secret string) *hookReceiver {
	h := &hookReceiver{t: t, secret: []byte(secret)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify(h.secret, body, r.Header.Get(notify.HeaderSignature), 5*time.Minute, time.Now()); err != nil {
			t.Errorf("delivery %s: %v", r.Header.Get(notify.HeaderEvent), err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var n notify.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("delivery: %v in %s", err, body)
		}
		h.mu.Lock()
		h.got = append(h.got, n)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// await returns the first notification of event for which ok holds.
func (h *hookReceiver) await(event string, ok func(notify.Notification) bool) notify.Notification {
	h.t.Helper()
	var found notify.Notification
	poll.Eventually(h.t, 3*time.Minute, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, n := range h.got {
			if n.Event == event && (ok == nil || ok(n)) {
				found = n
				return true
			}
		}
		return false
	}, "a %s notification", event)
	return found
}

// hungReceiver takes requests and answers none until the test ends.
type hungReceiver struct {
	*httptest.Server
	release chan struct{}
	mu      sync.Mutex
	waiting int
}

func newHungReceiver(t *testing.T) *hungReceiver {
	h := &hungReceiver{release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.waiting++
		h.mu.Unlock()
		select {
		case <-h.release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(h.release); h.Close() })
	return h
}

func (h *hungReceiver) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

const hookSecret = "hook-secret-0123456789abcdef"

// notifyServer is serve.New with the runner engine, this console, a
// notifier and a --public-url, on 127.0.0.1, with the real CLI.
type notifyServer struct {
	t     *testing.T
	url   string
	state string
	repo  string
	srv   *serve.Server
}

func startNotifyServer(t *testing.T, targets []notify.Target) *notifyServer {
	t.Helper()
	api := fakeapi.New(t, notifyScript)
	env := claudetest.NewEnv(t, api.URL)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ns := &notifyServer{t: t, url: "http://" + ln.Addr().String(), state: filepath.Join(t.TempDir(), "state"), repo: claudetest.GitRepo(t)}
	n, err := notify.New(targets, notify.Options{Backoff: 10 * time.Millisecond, Timeout: time.Hour, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	ns.srv, err = serve.New(serve.Config{
		Token: e2eToken, Roots: []string{ns.repo}, StateDir: ns.state, WorkDir: ns.repo,
		Binary: claudetest.Binary(t), Environ: env.Environ(), Engine: serve.RunnerEngine, Web: web.Handler(),
		Getenv: func(string) string { return "" }, Logf: t.Logf,
		Notifier: n, PublicURL: ns.url + "/",
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	hs := &http.Server{Handler: ns.srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		if err := ns.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		_ = hs.Close()
		n.Close(ctx)
	})
	return ns
}

// call sends an API request with the token and decodes the answer into out.
func (ns *notifyServer) call(method, path string, body any, want int, out any) {
	ns.t.Helper()
	req, _ := http.NewRequest(method, ns.url+path, strings.NewReader(jsonString(body)))
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ns.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		ns.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			ns.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

// Prompts the fake API's script (notifyScript) answers.
const (
	askWrite = "NOTIFY-WRITE"
	jobOK    = "NOTIFY-OK"
	jobLoop  = "NOTIFY-LOOP"
)

// notifyScript: NOTIFY-WRITE <name> writes <name>.txt (a Write the session
// asks permission for) and says so; NOTIFY-OK answers at once; NOTIFY-LOOP
// reads a file again and again until max_turns stops it.
func notifyScript(r *fakeapi.Request) fakeapi.Response {
	dir := r.WorkingDir()
	text := r.Text()
	switch first := r.FirstUser().Text(); {
	case strings.Contains(first, jobLoop):
		return fakeapi.ToolUse(fakeapi.Read(filepath.Join(dir, "README.md")))
	case strings.Contains(first, jobOK):
		return fakeapi.Text("ok")
	}
	if r.HasToolResult() {
		return fakeapi.Text("Done writing.")
	}
	if i := strings.Index(text, askWrite); i >= 0 {
		name := strings.Fields(text[i+len(askWrite):])[0]
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, name+".txt"), "approved by link\n"))
	}
	return fakeapi.Text("Noted.")
}

// TestApproveFromNotification: a real-CLI session asks to Write; the
// webhook gets a signed permission_request with a link; Chromium opens it
// and clicks Allow; the turn completes with the file written, audited as
// decided by link, and session_idle follows. The used link, a tampered one
// and an expired one are refused in the browser and decide nothing.
func TestApproveFromNotification(t *testing.T) {
	hook := newHookReceiver(t, hookSecret)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(hookSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := startNotifyServer(t, []notify.Target{{URL: hook.URL, SecretFile: secretFile}})
	b := browser.New(t)

	var sess struct {
		ID       string `json:"id"`
		Worktree string `json:"worktree"`
	}
	ns.call("POST", "/api/sessions", map[string]any{"repo": ns.repo, "name": "linked", "permission_prompt": "client", "permission_timeout": "3m"}, 201, &sess)
	ns.call("POST", "/api/sessions/"+sess.ID+"/messages", map[string]string{"content": askWrite + " first"}, 202, nil)
	req := hook.await(notify.EventPermissionRequest, nil)
	if req.Session != sess.ID || req.Permission == nil || req.Permission.Tool != "Write" ||
		!strings.HasPrefix(req.Permission.ApproveURL, ns.url+"/approve/") || req.ConsoleURL != ns.url+"/#/sessions/"+sess.ID {
		t.Fatalf("permission_request: %+v %+v", req, req.Permission)
	}
	link := req.Permission.ApproveURL

	tab := b.Tab(t, browser.Viewport{Width: 1000, Height: 800})
	run := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, 90*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("browser: %v", err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(tab, 90*time.Second)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			body, _ := chromedp.Run(tab, chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
			t.Fatalf("text of %s: %v; the page says:\n%s", sel, err, body)
		}
		return s
	}
	run(chromedp.Navigate(link))
	if got := text("#tool"); got != "Write" {
		t.Fatalf("the page shows tool %q", got)
	}
	if got := text("#diff"); !strings.Contains(got, "+ approved by link") {
		t.Fatalf("the page's diff: %q", got)
	}
	run(chromedp.Click(chromedp.CSS("#allow")))
	if got := text("#link-done"); !strings.Contains(got, "Allowed.") {
		t.Fatalf("after Allow: %q", got)
	}
	hook.await(notify.EventSessionIdle, func(n notify.Notification) bool { return n.Session == sess.ID })
	data, err := os.ReadFile(filepath.Join(sess.Worktree, "first.txt"))
	if err != nil || string(data) != "approved by link\n" {
		t.Fatalf("first.txt: %q %v", data, err)
	}
	audit, _ := os.ReadFile(filepath.Join(ns.state, "sessions", sess.ID, "audit.jsonl"))
	if !strings.Contains(string(audit), `"decision":"allow","rule":"link"`) {
		t.Fatalf("audit.jsonl does not say a link decided:\n%s", audit)
	}

	// The link again: used up.
	run(chromedp.Navigate(link))
	if got := text("#link-error"); !strings.Contains(got, "used already") {
		t.Fatalf("second use: %q", got)
	}

	// A second request: its link tampered with, then expired.
	ns.call("POST", "/api/sessions/"+sess.ID+"/messages", map[string]string{"content": askWrite + " second"}, 202, nil)
	req2 := hook.await(notify.EventPermissionRequest, func(n notify.Notification) bool {
		return n.Permission != nil && n.Permission.RequestID != req.Permission.RequestID
	})
	link2 := req2.Permission.ApproveURL
	tampered := []byte(link2)
	i := len(ns.url + "/approve/x")
	tampered[i] ^= 1
	run(chromedp.Navigate(string(tampered)))
	if got := text("#link-error"); !strings.Contains(got, "not made by this server") {
		t.Fatalf("tampered: %q", got)
	}
	serve.SetLinkClock(ns.srv, func() time.Time { return time.Now().Add(11 * time.Minute) })
	run(chromedp.Navigate(link2))
	if got := text("#link-error"); !strings.Contains(got, "expired") {
		t.Fatalf("expired: %q", got)
	}
	var st struct {
		PendingPermissions []json.RawMessage `json:"pending_permissions"`
	}
	ns.call("GET", "/api/sessions/"+sess.ID, nil, 200, &st)
	if len(st.PendingPermissions) != 1 {
		t.Fatalf("a refused link decided: %d pending", len(st.PendingPermissions))
	}
	if _, err := os.Stat(filepath.Join(sess.Worktree, "second.txt")); !os.IsNotExist(err) {
		t.Fatalf("second.txt was written: %v", err)
	}
}

// TestRunNotifiesWithDeadTargets: a run with a failing job notifies
// job_failed and run_finished with the report's numbers, while one
// receiver hangs on its first request and another answers 500: the run
// finishes (and its notifications reach the good receiver) with the hung
// receiver still holding that request.
func TestRunNotifiesWithDeadTargets(t *testing.T) {
	hook := newHookReceiver(t, hookSecret)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(hookSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	hung := newHungReceiver(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	t.Cleanup(failing.Close)
	ns := startNotifyServer(t, []notify.Target{{URL: hung.URL}, {URL: failing.URL}, {URL: hook.URL, SecretFile: secretFile}})

	jobs := "version: 1\nconcurrency: 2\ndefaults:\n  max_turns: 2\njobs:\n" +
		"  - name: good\n    prompt: " + jobOK + "\n  - name: loop\n    prompt: " + jobLoop + "\n"
	var run struct {
		ID string `json:"id"`
	}
	ns.call("POST", "/api/runs", map[string]string{"jobs_yaml": jobs}, 201, &run)
	fin := hook.await(notify.EventRunFinished, func(n notify.Notification) bool { return n.RunID == run.ID })
	if hung.held() < 1 {
		t.Fatal("the hung receiver got nothing: the test proves nothing")
	}
	failed := hook.await(notify.EventJobFailed, func(n notify.Notification) bool { return n.RunID == run.ID })
	ok := hook.await(notify.EventJobSucceeded, func(n notify.Notification) bool { return n.RunID == run.ID })
	if failed.Job != "loop" || failed.Reason != report.ReasonMaxTurns || ok.Job != "good" {
		t.Errorf("job notifications: failed %+v, succeeded %+v", failed, ok)
	}
	var rep report.Report
	data, err := os.ReadFile(filepath.Join(ns.state, "runs", run.ID, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if fin.Totals == nil || *fin.Totals != rep.Totals || fin.Totals.Jobs != 2 || fin.Totals.Failed != 1 || fin.Totals.Succeeded != 1 {
		t.Errorf("run_finished totals %+v, report %+v", fin.Totals, rep.Totals)
	}
	if fin.ConsoleURL != ns.url+"/#/runs/"+run.ID {
		t.Errorf("console url %q", fin.ConsoleURL)
	}
}
