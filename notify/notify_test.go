package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// receiver is a loopback HTTP server that records what it gets and answers
// with status (200 by default).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []received
	status atomic.Int32
	hang   chan struct{} // when set, requests wait for it to close
	hits   atomic.Int32
}

type received struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		if r.hang != nil {
			select {
			case <-r.hang:
			case <-req.Context().Done():
			}
			return
		}
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.URL.Path, req.Header.Clone(), b})
		r.mu.Unlock()
		if s := r.status.Load(); s != 0 {
			w.WriteHeader(int(s))
		}
	}))
	t.Cleanup(func() {
		if r.hang != nil {
			select {
			case <-r.hang:
			default:
				close(r.hang)
			}
		}
		r.Close()
	})
	return r
}

func (r *receiver) received() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func secretFile(t *testing.T, secret string) string {
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newNotifier(t *testing.T, targets []Target, o Options) *Notifier {
	t.Helper()
	if o.Backoff == 0 {
		o.Backoff = time.Millisecond
	}
	n, err := New(targets, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func closeNow(n *Notifier) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n.Close(ctx)
}

const secret = "0123456789abcdef-signing-key"

var permission = Notification{Event: EventPermissionRequest, Session: "s1", Title: "pneuma session s1 asks to use Write",
	Permission: &Permission{RequestID: "r1", Tool: "Write", Input: `{"file_path":"a.txt","content":"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"}`,
		ApproveURL: "https://pneuma.example/approve/TOKEN"}, ConsoleURL: "https://pneuma.example/#/sessions/s1"}

func TestJSONIsSignedAndRedacted(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL + "/hook", SecretFile: secretFile(t, secret)}}, Options{})
	n.Notify(permission)
	closeNow(n)
	got := r.received()
	if len(got) != 1 {
		t.Fatalf("got %d deliveries, want 1", len(got))
	}
	g := got[0]
	if err := Verify([]byte(secret), g.body, g.header.Get(HeaderSignature), 5*time.Minute, time.Now()); err != nil {
		t.Fatalf("signature: %v (header %q)", err, g.header.Get(HeaderSignature))
	}
	if err := Verify([]byte("another-key-of-sixteen"), g.body, g.header.Get(HeaderSignature), 5*time.Minute, time.Now()); err == nil {
		t.Error("a foreign key verified the signature")
	}
	tampered := []byte(strings.Replace(string(g.body), "Write", "Bash", 1))
	if err := Verify([]byte(secret), tampered, g.header.Get(HeaderSignature), 5*time.Minute, time.Now()); err == nil {
		t.Error("a tampered body verified")
	}
	if err := Verify([]byte(secret), g.body, g.header.Get(HeaderSignature), time.Minute, time.Now().Add(10*time.Minute)); err == nil {
		t.Error("a replay ten minutes later verified")
	}
	if g.header.Get(HeaderEvent) != EventPermissionRequest || g.header.Get(HeaderDelivery) == "" {
		t.Errorf("headers: %v", g.header)
	}
	var nt Notification
	if err := json.Unmarshal(g.body, &nt); err != nil {
		t.Fatal(err)
	}
	if nt.Schema != Schema || nt.Event != EventPermissionRequest || nt.Session != "s1" || nt.Permission == nil ||
		nt.Permission.Tool != "Write" || nt.Permission.ApproveURL != permission.Permission.ApproveURL || nt.Time.IsZero() {
		t.Errorf("payload: %s", g.body)
	}
	if strings.Contains(string(g.body), "sk-ant-api03") || !strings.Contains(nt.Permission.Input, "[REDACTED]") {
		t.Errorf("the API key reached the payload: %s", nt.Permission.Input)
	}
}

func TestUnsignedWithoutSecret(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL}}, Options{})
	n.Notify(permission)
	closeNow(n)
	if got := r.received(); len(got) != 1 || got[0].header.Get(HeaderSignature) != "" {
		t.Fatalf("got %+v", got)
	}
}

func TestSlackIsBlockKitWithButtons(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL + "/services/T0/B0/XYZ", Format: FormatSlack}}, Options{})
	n.Notify(permission)
	closeNow(n)
	got := r.received()
	if len(got) != 1 || got[0].path != "/services/T0/B0/XYZ" {
		t.Fatalf("got %+v", got)
	}
	var msg struct {
		Text   string `json:"text"`
		Blocks []struct {
			Type     string `json:"type"`
			Text     *struct{ Type, Text string }
			Elements []struct {
				Type, URL, Style string
			} `json:"elements"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(got[0].body, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Text != permission.Title || len(msg.Blocks) != 4 || msg.Blocks[0].Type != "header" || msg.Blocks[3].Type != "actions" {
		t.Fatalf("message: %s", got[0].body)
	}
	if s := msg.Blocks[1].Text.Text; !strings.Contains(s, "Write wants to run") || strings.Contains(s, "sk-ant-api03") {
		t.Errorf("section: %q", s)
	}
	b := msg.Blocks[3].Elements
	if len(b) != 2 || b[0].URL != permission.Permission.ApproveURL || b[0].Style != "primary" || b[1].URL != permission.ConsoleURL {
		t.Errorf("buttons: %+v", b)
	}
}

func TestNtfyPublishesJSONToTheRoot(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL + "/mytopic", Format: FormatNtfy}}, Options{})
	n.Notify(permission)
	n.Notify(Notification{Event: EventRunFinished, RunID: "r1", Title: "done", Totals: &report.Totals{Jobs: 3, Succeeded: 2, Failed: 1}})
	closeNow(n)
	got := r.received()
	if len(got) != 2 {
		t.Fatalf("got %d", len(got))
	}
	var msg struct {
		Topic, Title, Message, Click string
		Priority                     int
		Actions                      []struct{ Action, Label, URL string }
	}
	if err := json.Unmarshal(got[0].body, &msg); err != nil {
		t.Fatal(err)
	}
	if got[0].path != "/" || msg.Topic != "mytopic" || msg.Priority != 4 || msg.Title != permission.Title ||
		msg.Click != permission.Permission.ApproveURL || len(msg.Actions) != 2 || msg.Actions[0].Action != "view" {
		t.Errorf("ntfy message at %s: %s", got[0].path, got[0].body)
	}
	if err := json.Unmarshal(got[1].body, &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg.Message, "3 jobs: 2 succeeded, 1 failed") || msg.Priority != 2 {
		t.Errorf("run_finished: %s", got[1].body)
	}
}

func TestEventsFilter(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL, Events: []string{EventJobFailed}}}, Options{})
	n.Notify(permission)
	n.Notify(Notification{Event: EventJobFailed, Job: "lint"})
	closeNow(n)
	if got := r.received(); len(got) != 1 || got[0].header.Get(HeaderEvent) != EventJobFailed {
		t.Fatalf("got %+v", got)
	}
}

func TestRetriesOn5xxNeverOn4xx(t *testing.T) {
	for _, tc := range []struct {
		status int
		hits   int32
	}{{500, 3}, {503, 3}, {400, 1}, {404, 1}, {429, 1}} {
		r := newReceiver(t)
		r.status.Store(int32(tc.status))
		var logs []string
		var mu sync.Mutex
		n := newNotifier(t, []Target{{URL: r.URL}}, Options{Attempts: 3, Logf: func(f string, a ...any) {
			mu.Lock()
			logs = append(logs, f)
			mu.Unlock()
		}})
		n.Notify(permission)
		n.Notify(permission)
		closeNow(n)
		if got := r.hits.Load(); got != 2*tc.hits {
			t.Errorf("%d: %d requests for 2 notifications, want %d", tc.status, got, 2*tc.hits)
		}
		if st := n.Stats()[0]; st.Failed != 2 || st.Delivered != 0 {
			t.Errorf("%d: stats %+v", tc.status, st)
		}
		mu.Lock()
		// One line at the first failure, one summary at Close.
		if len(logs) != 2 {
			t.Errorf("%d: %d log lines, want 2: %q", tc.status, len(logs), logs)
		}
		mu.Unlock()
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) < 3 {
			w.WriteHeader(502)
		}
	}))
	defer srv.Close()
	n := newNotifier(t, []Target{{URL: srv.URL}}, Options{})
	n.Notify(permission)
	closeNow(n)
	if st := n.Stats()[0]; st.Delivered != 1 || st.Failed != 0 || hits.Load() != 3 {
		t.Fatalf("stats %+v after %d requests", st, hits.Load())
	}
}

// A receiver that never answers, or answers 500, never makes Notify wait:
// with its queue full, further notifications are dropped and counted, and
// Close gives up at its deadline.
func TestDeadTargetNeverBlocks(t *testing.T) {
	hung := newReceiver(t)
	hung.hang = make(chan struct{})
	failing := newReceiver(t)
	failing.status.Store(500)
	good := newReceiver(t)
	n, err := New([]Target{{URL: hung.URL}, {URL: failing.URL}, {URL: good.URL}}, Options{Queue: 4, Timeout: time.Hour, Backoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const sent = 50
	// Notify returns each time while the hung receiver holds its first
	// request and the failing one waits an hour to retry; the good target
	// gets every notification.
	for i := range sent {
		n.Notify(Notification{Event: EventJobSucceeded, Job: "j"})
		poll.Eventually(t, 10*time.Second, func() bool { return len(good.received()) == i+1 }, "the good target got %d", i+1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	closed := make(chan struct{})
	go func() { n.Close(ctx); close(closed) }()
	poll.Eventually(t, 10*time.Second, func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	}, "Close returned after its deadline")
	st := n.Stats()
	if st[0].Delivered != 0 || st[0].Failed+st[0].Dropped != sent || st[1].Failed+st[1].Dropped != sent || st[2].Delivered != sent {
		t.Errorf("stats %+v", st)
	}
	if st[0].Dropped < sent-5 {
		t.Errorf("the hung target's queue held more than its bound: %+v", st[0])
	}
}

func TestCheckTargets(t *testing.T) {
	_, err := New([]Target{
		{URL: "ftp://x/y"},
		{URL: "https://u:p@x/y"},
		{URL: "https://ntfy.sh", Format: FormatNtfy},
		{URL: "https://x", Format: "xml", Events: []string{"job_done"}},
		{URL: "https://x", Format: FormatSlack, SecretFile: "/nope"},
		{URL: "https://x", SecretFile: secretFile(t, "short")},
	}, Options{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`notify[0]: url "ftp://x"`, "notify[1]: url: credentials", "notify[2]: url: an ntfy URL ends in its topic",
		`notify[3]: format "xml"`, `notify[3]: events: "job_done"`, "notify[4]: secret_file: only the json format",
		"notify[5]: secret_file", "at least 16",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "u:p") {
		t.Error("the error shows the URL's credentials")
	}
}

func TestNameHidesThePath(t *testing.T) {
	if got := Name("https://hooks.slack.com/services/T0/B0/SECRET"); got != "https://hooks.slack.com" {
		t.Fatal(got)
	}
}

func TestReporterNotifiesARun(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL}}, Options{})
	var seen atomic.Int32
	rep := n.Reporter(reporterFunc(func(runner.Event) { seen.Add(1) }), func(id string) string { return "https://pneuma.example/#/runs/" + id })
	now := time.Now()
	for _, e := range []runner.Event{
		{Type: runner.EventRunStarted, RunID: "R"},
		{Type: runner.EventJobFinished, RunID: "R", Job: "ok", Result: &report.Job{Status: report.StatusSucceeded}},
		{Type: runner.EventJobFinished, RunID: "R", Job: "bad", Result: &report.Job{Status: report.StatusFailed, Reason: report.ReasonMaxTurns, Error: "token=abcdefghijklmnopqrstuvwxyz"}},
		{Type: runner.EventJobFinished, RunID: "R", Job: "b1", Result: &report.Job{Status: report.StatusSkipped, Reason: report.ReasonBudget}, SpentUSD: 2},
		{Type: runner.EventJobFinished, RunID: "R", Job: "b2", Result: &report.Job{Status: report.StatusSkipped, Reason: report.ReasonBudget}},
		{Type: runner.EventUsageLimitWait, RunID: "R", ResumeAt: &now, Message: "held"},
		{Type: runner.EventRunFinished, RunID: "R", Report: &report.Report{Totals: report.Totals{Jobs: 4, Succeeded: 1, Failed: 1, Skipped: 2, CostUSD: 1.5}}},
	} {
		rep.Event(e)
	}
	closeNow(n)
	if seen.Load() != 7 {
		t.Errorf("next saw %d events, want 7", seen.Load())
	}
	var events []string
	var last Notification
	for _, g := range r.received() {
		var nt Notification
		if err := json.Unmarshal(g.body, &nt); err != nil {
			t.Fatal(err)
		}
		events = append(events, nt.Event+":"+nt.Job)
		if nt.Event == EventJobFailed && (nt.Reason != report.ReasonMaxTurns || strings.Contains(nt.Error, "abcdefghij")) {
			t.Errorf("job_failed: %s", g.body)
		}
		if nt.RunID != "R" || nt.ConsoleURL != "https://pneuma.example/#/runs/R" {
			t.Errorf("run id or console: %s", g.body)
		}
		last = nt
	}
	want := "job_succeeded:ok job_failed:bad budget_reached:b1 usage_limit_hold: run_finished:"
	if strings.Join(events, " ") != want {
		t.Errorf("events %q, want %q", strings.Join(events, " "), want)
	}
	if last.Totals == nil || last.Totals.Jobs != 4 || last.Totals.Failed != 1 || last.Totals.Skipped != 2 || last.Status != "failed" {
		t.Errorf("run_finished: %+v", last)
	}
}

type reporterFunc func(runner.Event)

func (f reporterFunc) Event(e runner.Event) { f(e) }

func TestSessionsNotifyPermissionAndIdle(t *testing.T) {
	r := newReceiver(t)
	n := newNotifier(t, []Target{{URL: r.URL}}, Options{})
	exp := time.Now().Add(10 * time.Minute)
	s := n.Sessions(func(sess, req string) (string, time.Time) {
		return "https://p.example/approve/" + sess + "." + req, exp
	},
		func(sess string) string { return "https://p.example/#/sessions/" + sess })
	ev := func(typ string, v any) runner.SessionEvent {
		b, _ := json.Marshal(v)
		return runner.SessionEvent{Type: typ, Data: b}
	}
	s.Event("s1", ev("status_change", map[string]string{"status": "idle"})) // opened: no turn yet
	s.Event("s1", ev("status_change", map[string]string{"status": "running"}))
	s.Event("s1", ev("permission_request", runner.PendingPermission{RequestID: "q1", ToolName: "Write", Input: json.RawMessage(`{"file_path":"x"}`)}))
	s.Event("s1", ev("turn_end", runner.TurnOutcome{Status: "succeeded"}))
	s.Event("s1", ev("status_change", map[string]string{"status": "idle"}))
	s.Event("s1", ev("status_change", map[string]string{"status": "idle"})) // no second turn
	closeNow(n)
	got := r.received()
	if len(got) != 2 {
		t.Fatalf("got %d notifications, want 2", len(got))
	}
	var p, idle Notification
	_ = json.Unmarshal(got[0].body, &p)
	_ = json.Unmarshal(got[1].body, &idle)
	if p.Event != EventPermissionRequest || p.Permission.ApproveURL != "https://p.example/approve/s1.q1" || p.Permission.ExpiresAt == nil ||
		p.Permission.Input != `{"file_path":"x"}` || p.ConsoleURL != "https://p.example/#/sessions/s1" {
		t.Errorf("permission_request: %s", got[0].body)
	}
	if idle.Event != EventSessionIdle || idle.Session != "s1" || idle.Status != "succeeded" {
		t.Errorf("session_idle: %s", got[1].body)
	}
}

func TestDisabledNotifierPassesThrough(t *testing.T) {
	var n *Notifier
	var seen int
	rep := n.Reporter(reporterFunc(func(runner.Event) { seen++ }), nil)
	rep.Event(runner.Event{Type: runner.EventRunStarted})
	n.Notify(permission)
	n.Sessions(nil, nil).Event("s", runner.SessionEvent{Type: "turn_end"})
	n.Close(context.Background())
	if seen != 1 {
		t.Fatal("the next reporter was skipped")
	}
}

// The jobs file's decoder knows the same formats and events.
func TestJobsFileKnowsTheSameValues(t *testing.T) {
	if !slices.Equal(Formats, jobfile.NotifyFormats) || !slices.Equal(Events, jobfile.NotifyEvents) {
		t.Fatalf("notify %v %v, jobfile %v %v", Formats, Events, jobfile.NotifyFormats, jobfile.NotifyEvents)
	}
}
