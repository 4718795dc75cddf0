package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pneuma-cli/pneuma/internal/testbed/boxtest"
	"github.com/pneuma-cli/pneuma/internal/testbed/browser"
)

// console is a server the browser tests run against: the real one
// (real_test.go) or, for faults the real one will not produce, the stand-in.
type console interface {
	URL() string
	Token() string
}

// page is one browser tab under test.
type page struct {
	t   *testing.T
	ctx context.Context
}

func openPage(t *testing.T, b *browser.Browser, v browser.Viewport, url string) page {
	p := page{t: t, ctx: b.Tab(t, v)}
	p.do(chromedp.Navigate(url))
	return p
}

// pageTimeout bounds one browser step or wait: a real CLI on a shared
// machine takes seconds per turn.
const pageTimeout = 90 * time.Second

func (p page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// wait polls a JavaScript expression until it is truthy.
func (p page) wait(expr, what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, pageTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(30*time.Millisecond), chromedp.WithPollingTimeout(pageTimeout))); err != nil {
		p.t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func eval[T any](p page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

var desktop = browser.Viewport{Width: 1280, Height: 900}

// loggedIn opens the console with the token in the fragment, as the URL
// pneuma serve prints does.
func loggedIn(t *testing.T, b *browser.Browser, srv console, v browser.Viewport, route string) page {
	p := openPage(t, b, v, srv.URL()+"/#token="+srv.Token())
	p.wait(`location.hash === '#/runs'`, "the runs page")
	if route != "" {
		p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
	}
	return p
}

func TestConsoleToken(t *testing.T) {
	srv := startReal(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	if href := eval[string](p, `location.href`); strings.Contains(href, srv.Token()) {
		t.Errorf("the token stayed in the address bar: %s", href)
	}
	if got := eval[string](p, `sessionStorage.getItem('pneuma.token')`); got != srv.Token() {
		t.Errorf("sessionStorage token = %q, want the one from the fragment", got)
	}
	p.wait(`document.querySelector('#start-run') !== null && document.querySelector('#runs, main p.muted')`, "the runs page, loaded")

	// Without a token: a labelled token field; a wrong one (403) is refused
	// and asked again; the right one opens the pages.
	q := openPage(t, b, desktop, srv.URL()+"/")
	q.wait(`document.querySelector('input[name=token]') !== null`, "the token field")
	q.do(chromedp.SendKeys(chromedp.CSS("input[name=token]"), "wrong"+kb.Enter))
	q.wait(`document.querySelector('.error[role=alert]') !== null && document.querySelector('input[name=token]')`, "the refused token")
	q.do(chromedp.SendKeys(chromedp.CSS("input[name=token]"), srv.Token()+kb.Enter))
	q.wait(`document.querySelector('#start-run') !== null && document.querySelector('#runs, main p.muted')`, "the runs page after signing in")
}

// startRun starts a run of three jobs from the runs page and waits for it
// to succeed; it returns the run's id.
func startRun(p page, srv *realServer) string {
	p.t.Helper()
	jobs := srv.writeJobs("alpha", "beta", "gamma")
	p.wait(`document.querySelector('input[name=jobs_file]')`, "the start-run form")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=jobs_file]"), jobs), chromedp.Click(chromedp.CSS("#start-run button[type=submit]")))
	p.wait(`/^#\/runs\/[^/]+$/.test(location.hash)`, "the run page")
	id := strings.TrimPrefix(eval[string](p, `location.hash`), "#/runs/")
	p.wait(`document.querySelectorAll('#jobs tbody tr').length === 3 &&
		[...document.querySelectorAll('#jobs tbody .status .badge')].every(b => b.dataset.status === 'succeeded') &&
		document.querySelector('.run-head .badge')?.dataset.status === 'succeeded'`, "three succeeded jobs and the run finished")
	return id
}

func TestConsoleRun(t *testing.T) {
	srv := startReal(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	id := startRun(p, srv)
	rep := srv.report(id)
	for _, j := range rep["jobs"].([]any) {
		job := j.(map[string]any)
		cost := job["cost_usd"].(float64)
		if cost <= 0 {
			t.Errorf("job %s: report cost %v: the fake API's usage should cost something", job["name"], cost)
		}
		got := eval[string](p, fmt.Sprintf(`document.querySelector('#jobs tr[data-job=%q] .cost').textContent`, job["name"]))
		if want := money(cost); got != want {
			t.Errorf("job %s cost %q, want %q", job["name"], got, want)
		}
	}
	totals := rep["totals"].(map[string]any)
	if got, want := eval[string](p, `document.querySelector('#total-cost').textContent`), money(totals["cost_usd"].(float64)); got != want {
		t.Errorf("total cost %q, want %q (report.json)", got, want)
	}
	tok := 0
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		tok += int(totals[k].(float64))
	}
	if got, want := eval[string](p, `document.querySelector('#total-tokens').textContent`), thousands(tok); got != want {
		t.Errorf("total tokens %q, want %q", got, want)
	}
	if got, want := eval[string](p, `document.querySelector('#total-turns').textContent`), fmt.Sprint(totals["num_turns"]); got != want {
		t.Errorf("total turns %q, want %q", got, want)
	}
	// The list shows the run finished, with the report's cost.
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/runs'`))
	p.wait(fmt.Sprintf(`document.querySelector('#runs tr[data-run=%q] .badge')?.dataset.status === 'succeeded'`, id), "the run in the list")
	if got, want := eval[string](p, fmt.Sprintf(`document.querySelector('#runs tr[data-run=%q] progress').value + '/' + document.querySelector('#runs tr[data-run=%q] progress').max`, id, id)), "3/3"; got != want {
		t.Errorf("run progress in the list %s, want %s", got, want)
	}
}

// money formats dollars as the console does.
func money(v float64) string {
	if v > 0 && v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

const noXSS = `window.__xss === undefined`

// watchStreaming records, from now on, whether a streamed (not yet final)
// assistant message ever showed text containing sub.
func watchStreaming(p page, sub string) {
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.__streamed = false;
		new MutationObserver(() => {
			const e = document.querySelector('.msg.streaming');
			if (e && e.textContent.includes(%q)) window.__streamed = true;
		}).observe(document.body, {subtree: true, childList: true, characterData: true})`, sub)))
}

// newSession creates a session from the sessions page (permission prompts
// in the console) and returns its id once its page is live.
func newSession(p page, srv *realServer) string {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/sessions'`))
	p.wait(`document.querySelector('#new-session') !== null && document.querySelector('#np-prompts').checked`, "the new-session form")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=repo]"), srv.repo), chromedp.Click(chromedp.CSS("#new-session button[type=submit]")))
	p.wait(`/^#\/sessions\/[^/]+$/.test(location.hash) && document.querySelector('.conn')?.dataset.state === 'live'`, "the live session page")
	return strings.TrimPrefix(eval[string](p, `location.hash`), "#/sessions/")
}

// say types a message into the composer and sends it with Enter. (The
// composer is emptied first: DevTools sends Enter's character even when the
// keydown that sent the last message was cancelled.)
func say(p page, text string) {
	p.t.Helper()
	p.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#composer').value = ''`),
		chromedp.SendKeys(chromedp.CSS("#composer"), text+kb.Enter))
}

// writeTurn sends the scripted message: the model streams text, asks to
// Write the payload file (the card shows it as text), is allowed, reads the
// file back (its result carries the payload) and ends the turn.
func writeTurn(p page) {
	p.t.Helper()
	watchStreaming(p, "Let me write")
	n := eval[int](p, `document.querySelectorAll('.note').length`)
	say(p, "SESSION-WRITE please write "+payloadFile)
	p.wait(`document.querySelector('.permission:not(.resolved)') !== null`, "the permission card")
	if !eval[bool](p, `window.__streamed`) {
		p.t.Error("no streamed text before the permission request")
	}
	if got := eval[string](p, `document.querySelector('.permission:not(.resolved) h2').textContent`); got != "Allow Write?" {
		p.t.Errorf("permission card title %q", got)
	}
	if got := eval[string](p, `document.querySelector('.permission:not(.resolved)').textContent`); !strings.Contains(got, xss) {
		p.t.Errorf("the Write card does not show the payload as text: %q", got)
	}
	p.do(chromedp.Click(chromedp.CSS(".permission:not(.resolved) .allow")))
	p.wait(fmt.Sprintf(`document.querySelectorAll('.note').length > %d && [...document.querySelectorAll('.msg.assistant .text')].some(e => e.textContent === 'Done: the file holds the payload.')`, n), "the end of the turn")
}

func TestConsoleSession(t *testing.T) {
	srv := startReal(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	id := newSession(p, srv)
	writeTurn(p)
	if got := eval[string](p, `document.querySelector('.permission.resolved .resolution').textContent`); got != "Allowed by client." {
		t.Errorf("resolved card says %q", got)
	}
	read := `[...document.querySelectorAll('details.tool')].find(d => d.querySelector('.tool-name').textContent === 'Read')`
	if got := eval[string](p, read+`.querySelector('.tool-state').textContent + ' ' + `+read+`.querySelector('.out').textContent`); !strings.HasPrefix(got, "done ") || !strings.Contains(got, xss) {
		t.Errorf("the Read tool's result: %q, want done and the payload as text", got)
	}
	if !eval[bool](p, noXSS+` && !document.querySelector('#conversation img, #conversation script')`) {
		t.Error("the payload in a tool result ran or made an element")
	}
	p.wait(`document.querySelector('#session-status .badge')?.dataset.status === 'idle' && document.querySelector('#session-turns').textContent !== '0'`, "idle with turns counted")
	if got := eval[string](p, `document.querySelector('#session-cost').textContent`); got == "$0.00" {
		t.Errorf("session cost %s after a turn", got)
	}
	deltas := 0
	for _, ev := range srv.events("/api/sessions/" + id) {
		if e, _ := ev["event"].(map[string]any); ev["type"] == "stream_event" && e["type"] == "content_block_delta" {
			deltas++
		}
	}
	if deltas == 0 {
		t.Error("the server sent no stream_event deltas: the streamed text came from elsewhere")
	}

	// Restart the server: the page reconnects, and events the server wrote
	// while shutting down and after show once each.
	done := make(chan struct{})
	go func() { defer close(done); srv.Restart(time.Second) }()
	p.wait(`document.querySelector('.conn').dataset.state === 'reconnecting' && document.querySelector('.conn').textContent === 'Reconnecting…'`, "the reconnecting state")
	<-done
	p.wait(`document.querySelector('.conn').dataset.state === 'live'`, "the connection back")
	say(p, "after the restart")
	p.wait(`[...document.querySelectorAll('.msg.assistant .text')].some(e => e.textContent === 'Back after the restart.')`, "the answer after the restart")
	// The turn's last events (its result, then idle) before reading the log.
	p.wait(`[...document.querySelectorAll('.note')].filter(e => e.textContent.startsWith('Turn done')).length === 2 &&
		document.querySelector('#session-status .badge')?.dataset.status === 'idle'`, "the second turn's result")
	checkShownOnce(t, p, srv.events("/api/sessions/"+id))
	if !eval[bool](p, noXSS) {
		t.Error("the payload ran")
	}
}

// checkShownOnce compares the conversation with the server's event log:
// every user message and main-thread assistant message once, in seq order,
// every permission request one card, every result one note.
func checkShownOnce(t *testing.T, p page, evs []map[string]any) {
	t.Helper()
	var want []int
	count := map[string]int{}
	for _, ev := range evs {
		typ, _ := ev["type"].(string)
		count[typ]++
		if typ == "user_message" || (typ == "assistant" && ev["parent_tool_use_id"] == nil) {
			want = append(want, int(ev["seq"].(float64)))
		}
	}
	got := eval[[]int](p, `[...document.querySelectorAll('#conversation [data-seq]')].map(e => Number(e.dataset.seq))`)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages shown by seq %v, want %v (the server's log: %v)", got, want, count)
	}
	shown := eval[map[string]int](p, `({permission_request: document.querySelectorAll('.permission').length,
		result: [...document.querySelectorAll('.note')].filter(e => e.textContent.startsWith('Turn ')).length,
		cli_exited: [...document.querySelectorAll('.note')].filter(e => e.textContent.startsWith('Claude Code exited')).length})`)
	if count["cli_exited"] == 0 {
		t.Error("the server logged no cli_exited: nothing happened while the page was away")
	}
	for typ, n := range shown {
		if n != count[typ] {
			t.Errorf("%d %s shown, the server logged %d", n, typ, count[typ])
		}
	}
}

// TestConsolePages fills the console with real data (a run of three jobs, a
// session whose finished turn read the payload back and whose second turn
// waits for permission, the CLI's history), screenshots every page at 375
// and 1280 px, light and dark, and checks each with axe-core: no serious or
// critical violation, no sideways scrolling, and the payload never runs.
func TestConsolePages(t *testing.T) {
	srv := startReal(t)
	b := browser.New(t)
	axe := browser.AxeSource(t)
	setup := loggedIn(t, b, srv, desktop, "")
	run := startRun(setup, srv)
	sid := newSession(setup, srv)
	writeTurn(setup)
	say(setup, "SESSION-WRITE once more")
	setup.wait(`document.querySelector('.permission:not(.resolved)') !== null`, "a waiting permission")
	var sess struct {
		CLISessionID string `json:"cli_session_id"`
	}
	srv.get("/api/sessions/"+sid, &sess)
	cli := sess.CLISessionID
	if cli == "" {
		t.Fatal("the session has no CLI session id")
	}

	job := fmt.Sprintf("#/runs/%s/jobs/alpha", run)
	pages := []struct{ name, route, ready string }{
		{"runs", "#/runs", fmt.Sprintf(`document.querySelector('#runs tr[data-run=%q]')`, run)},
		{"run", "#/runs/" + run, `document.querySelectorAll('#jobs tbody tr').length === 3 && document.querySelector('.run-head .badge')?.dataset.status === 'succeeded'`},
		{"job-stream", job, `document.querySelector('.stream li')`},
		{"job-diff", job, `document.querySelector('#tab-diff') && (window.__tab === 'diff' || (window.__tab = 'diff', document.querySelector('#tab-diff').click(), false)) && document.querySelector('.dl.add')`},
		{"job-transcript", job, `document.querySelector('#tab-transcript') && (window.__tab === 'transcript' || (window.__tab = 'transcript', document.querySelector('#tab-transcript').click(), false)) && document.querySelector('#job-panel iframe.transcript, #job-panel pre.transcript-text')`},
		{"sessions", "#/sessions", fmt.Sprintf(`document.querySelector('#sessions tr[data-session=%q]')`, sid)},
		{"session", "#/sessions/" + sid, `document.querySelector('.permission:not(.resolved)') && document.querySelector('.conn').dataset.state === 'live'`},
		{"history", "#/history", `document.querySelector('#history tbody tr') && document.querySelector('svg.chart')`},
		{"transcript", "#/history/" + cli, `document.querySelector('pre.transcript-text')`},
		{"signin", "#/runs", `(sessionStorage.clear(), dispatchEvent(new HashChangeEvent('hashchange')), true) && document.querySelector('input[name=token]')`},
	}
	dir := filepath.Join("testdata", "screenshots")
	for _, v := range []browser.Viewport{{Width: 375, Height: 812}, {Width: 375, Height: 812, Dark: true}, desktop, {Width: 1280, Height: 900, Dark: true}} {
		p := loggedIn(t, b, srv, v, "")
		for _, pg := range pages {
			p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("window.__tab = ''; location.hash = %q", pg.route)))
			p.wait(pg.ready, pg.name)
			time.Sleep(150 * time.Millisecond) // fonts and layout settle
			browser.Screenshot(t, p.ctx, filepath.Join(dir, fmt.Sprintf("%s-%s.png", pg.name, v)))
			for _, viol := range browser.Axe(t, p.ctx, axe) {
				t.Errorf("%s at %s: %s", pg.name, v, viol)
			}
			if w := eval[int](p, `document.documentElement.scrollWidth`); w > int(v.Width) {
				t.Errorf("%s at %s: the page is %d px wide: it scrolls sideways", pg.name, v, w)
			}
			if !eval[bool](p, noXSS+` && !document.querySelector('main img, main script')`) {
				t.Errorf("%s at %s: the payload ran or made an element", pg.name, v)
			}
		}
	}
	checkJobTranscriptText(t, b, srv, job)
	// The transcript of the session shows the payload the tool read, as text.
	p := loggedIn(t, b, srv, desktop, "#/history/"+cli)
	p.wait(`document.querySelector('pre.transcript-text')`, "the transcript")
	if got := eval[string](p, `document.querySelector('pre.transcript-text').textContent`); !strings.Contains(got, xss) {
		t.Errorf("the transcript does not show the payload as text:\n%s", got)
	}
}

// TestConsoleHostileTranscript runs against the stand-in: an export with a
// raw script and an onerror image, which the real server never sends (its
// exports escape), must not run in the sandboxed transcript frame; nor may
// the payload in a diff line.
func TestConsoleHostileTranscript(t *testing.T) {
	srv := startStandIn(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "#/runs/run-9/jobs/lint")
	p.wait(`document.querySelector('.stream li') !== null`, "the stream tail")
	p.do(chromedp.Click(chromedp.CSS("#tab-diff")))
	p.wait(`document.querySelector('.dl.add') !== null`, "the diff")
	if got := eval[string](p, `document.querySelector('.dl.del').textContent`); !strings.Contains(got, xss) {
		t.Errorf("diff line %q does not show the payload as text", got)
	}
	for _, route := range []string{"", "#/history/h-1"} {
		if route == "" {
			p.do(chromedp.Click(chromedp.CSS("#tab-transcript")))
		} else {
			p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
		}
		p.wait(`document.querySelector('iframe.transcript') !== null`, "the transcript frame")
		time.Sleep(300 * time.Millisecond) // let the frame load (and fail to run anything)
		if got := eval[string](p, `document.querySelector('iframe.transcript').getAttribute('sandbox')`); got != "" {
			t.Errorf("transcript frame sandbox=%q, want an empty (strictest) sandbox", got)
		}
		if !eval[bool](p, noXSS+` && !document.querySelector('main img, main script')`) {
			t.Errorf("%s: a script in a transcript or a diff ran", route)
		}
	}
}

// checkJobTranscriptText: a job's transcript is shown as the text export in
// a <pre> (an HTML export in a srcdoc frame would inherit the console's CSP,
// which blocks its inline style), with what the job was asked.
func checkJobTranscriptText(t *testing.T, b *browser.Browser, srv *realServer, job string) {
	t.Helper()
	q := loggedIn(t, b, srv, desktop, job)
	q.do(chromedp.Click(chromedp.CSS("#tab-transcript")))
	q.wait(`document.querySelector('#job-panel pre.transcript-text')`, "the job's transcript as text")
	if got := eval[string](q, `document.querySelector('#job-panel pre.transcript-text').textContent`); !strings.Contains(got, "JOB-") {
		t.Errorf("the job's transcript does not show its prompt:\n%.500s", got)
	}
}

// TestConsoleSandbox: a sandboxed job's page shows its sandbox (the hosts
// it allowed, the connection and the write it refused), an unsandboxed
// job's says it had none, and a sandboxed session's page shows its
// sandbox live.
func TestConsoleSandbox(t *testing.T) {
	boxtest.Require(t, "the console's sandbox view")
	srv := startReal(t)
	outside := filepath.Join(srv.repo, "outside.txt")
	jobs := filepath.Join(srv.repo, "jobs.yaml")
	if err := os.WriteFile(jobs, []byte(fmt.Sprintf(`version: 1
jobs:
  - name: boxed
    prompt: %s %s
    permission_mode: acceptEdits
    policy: {allow: [Bash]}
    sandbox: {network: [example.com]}
  - name: open
    prompt: %sopen write open.txt
    permission_mode: acceptEdits
`, boxedMarker, outside, jobMarker)), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	p.wait(`document.querySelector('input[name=jobs_file]')`, "the start-run form")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=jobs_file]"), jobs), chromedp.Click(chromedp.CSS("#start-run button[type=submit]")))
	p.wait(`/^#\/runs\/[^/]+$/.test(location.hash)`, "the run page")
	id := strings.TrimPrefix(eval[string](p, `location.hash`), "#/runs/")
	p.wait(`document.querySelector('.run-head .badge')?.dataset.status === 'succeeded'`, "the run finished")
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the sandboxed job wrote into the repository")
	}

	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/runs/%s/jobs/boxed'`, id)))
	p.wait(`document.querySelector('#job-sandbox')?.dataset.sandbox === 'on'`, "the boxed job's sandbox")
	api := strings.TrimPrefix(srv.api.URL, "http://")
	got := eval[map[string]string](p, `({network: document.querySelector('#job-sandbox .sandbox-network').textContent,
		refused: document.querySelector('#job-sandbox .sandbox-refused').textContent,
		denied: document.querySelector('#job-sandbox .sandbox-denied').textContent})`)
	if got["network"] != api+", example.com" {
		t.Errorf("network shown %q, want %q", got["network"], api+", example.com")
	}
	if got["refused"] != "1 · "+refusedHost+" (1)" {
		t.Errorf("refused shown %q, want 1 · %s (1)", got["refused"], refusedHost)
	}
	if got["denied"] != "0, 1 · write "+outside+" (1)" {
		t.Errorf("denied shown %q, want 0, 1 · write %s (1)", got["denied"], outside)
	}
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/runs/%s/jobs/open'`, id)))
	p.wait(`document.querySelector('#job-sandbox')?.dataset.sandbox === 'off'`, "the open job's sandbox")
	if got := eval[string](p, `document.querySelector('#job-sandbox').textContent`); !strings.HasPrefix(got, "Sandbox off") {
		t.Errorf("the open job's sandbox: %q", got)
	}

	// A sandboxed session: its page shows the sandbox from its CLI's start.
	var s struct {
		ID string `json:"id"`
	}
	srv.post("/api/sessions", fmt.Sprintf(`{"repo":%q,"sandbox":{"network":["example.com"]}}`, srv.repo), &s)
	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/sessions/%s'`, s.ID)))
	p.wait(`document.querySelector('#session-sandbox')?.dataset.sandbox === 'on' && document.querySelector('.conn')?.dataset.state === 'live'`, "the session's sandbox")
	say(p, "hello")
	p.wait(fmt.Sprintf(`document.querySelector('#session-sandbox .sandbox-network')?.textContent === %q`, api+", example.com"), "the session's hosts after its CLI started")
}

// TestConsoleSwitch switches a live session's model and permission mode
// from its page once its CLI runs: the status shows the CLI's
// acknowledgement (the mode it names), the session records the switch, and
// a mode the server's policy refuses shows the server's error.
func TestConsoleSwitch(t *testing.T) {
	srv := startReal(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	id := newSession(p, srv)
	say(p, "hello")
	p.wait(`document.querySelector('#session-status .badge')?.dataset.status === 'idle' && document.querySelector('#session-turns').textContent !== '0'`, "the first turn's end")
	p.do(chromedp.SendKeys(chromedp.CSS("#switch-model"), "claude-haiku-4-5"), chromedp.Click(chromedp.CSS("#switch-model-go")))
	p.wait(`/^Model claude-haiku-4-5: acknowledged/.test(document.querySelector('#switch-status').textContent)`, "the CLI's acknowledgement of the model")
	p.do(chromedp.SetValue(chromedp.CSS("#switch-mode"), "plan"), chromedp.Click(chromedp.CSS("#switch-mode-go")))
	p.wait(`/^Mode plan: acknowledged .*"mode":"plan"/.test(document.querySelector('#switch-status').textContent)`, "the CLI's acknowledgement of the mode")
	var model, mode bool
	for _, ev := range srv.events("/api/sessions/" + id) {
		model = model || ev["type"] == "model_changed" && ev["model"] == "claude-haiku-4-5"
		mode = mode || ev["type"] == "permission_mode_changed" && ev["mode"] == "plan"
	}
	if !model || !mode {
		t.Errorf("the session recorded model_changed %v, permission_mode_changed %v; want both", model, mode)
	}
	p.do(chromedp.SetValue(chromedp.CSS("#switch-mode"), "bypassPermissions"), chromedp.Click(chromedp.CSS("#switch-mode-go")))
	p.wait(`/^Mode bypassPermissions failed: .*403.*not allowed by the server/.test(document.querySelector('#switch-status').textContent)`, "the refused mode's error")
	if got := eval[string](p, `document.querySelector('label[for=switch-mode]').textContent + '|' + document.querySelector('#switch-status').getAttribute('aria-live')`); got != "Permission mode|polite" {
		t.Errorf("switch form label and live region: %q", got)
	}
}

// TestConsoleHooks: a job with include_hook_events runs on the real CLI
// with a hook that succeeds and one that exits 1; its page counts the
// hooks run and the one that failed, and its stream names each hook line.
func TestConsoleHooks(t *testing.T) {
	srv := startReal(t, "settings")
	jobs := filepath.Join(srv.repo, "jobs.yaml")
	if err := os.WriteFile(jobs, []byte(`version: 1
jobs:
  - name: hooked
    prompt: `+jobMarker+`hooked write hooked.txt
    permission_mode: acceptEdits
    include_hook_events: true
    settings: '{"hooks":{"PreToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"true"}]}],"PostToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"exit 1"}]}]}}'
`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	p.wait(`document.querySelector('input[name=jobs_file]')`, "the start-run form")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=jobs_file]"), jobs), chromedp.Click(chromedp.CSS("#start-run button[type=submit]")))
	p.wait(`/^#\/runs\/[^/]+$/.test(location.hash)`, "the run page")
	id := strings.TrimPrefix(eval[string](p, `location.hash`), "#/runs/")
	p.wait(`document.querySelector('.run-head .badge')?.dataset.status === 'succeeded'`, "the run finished")

	p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/runs/%s/jobs/hooked'`, id)))
	p.wait(`document.querySelector('#job-hooks')?.hidden === false`, "the job's hooks")
	if got := eval[string](p, `document.querySelector('#job-hooks').textContent`); got != "Hooks: 2 run, 1 failed" {
		t.Errorf("hooks shown %q, want %q", got, "Hooks: 2 run, 1 failed")
	}
	p.wait(`[...document.querySelectorAll('ol.stream .sum')].some((e) => e.textContent === 'hook_response PostToolUse:Write: error (exit 1)')`,
		"the failed hook's line in the stream")
}
