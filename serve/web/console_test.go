package web_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/pneuma-cli/pneuma/internal/testbed/browser"
)

// startConsole starts the server the browser tests run against and returns
// it: its base URL (URL) and access token (Token). Today it is the scripted
// stand-in of standin_test.go; after the merge of pneuma serve it is the
// place to start the real server instead.
func startConsole(t *testing.T) *standIn { return startStandIn(t) }

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

func (p page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("browser: %v", err)
	}
}

// wait polls a JavaScript expression until it is truthy.
func (p page) wait(expr, what string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(30*time.Millisecond))); err != nil {
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
func loggedIn(t *testing.T, b *browser.Browser, srv *standIn, v browser.Viewport, route string) page {
	p := openPage(t, b, v, srv.URL()+"/#token="+srv.Token())
	p.wait(`location.hash === '#/runs'`, "the runs page")
	if route != "" {
		p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", route)))
	}
	return p
}

func TestConsoleToken(t *testing.T) {
	srv := startConsole(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	if href := eval[string](p, `location.href`); strings.Contains(href, srv.Token()) {
		t.Errorf("the token stayed in the address bar: %s", href)
	}
	if got := eval[string](p, `sessionStorage.getItem('pneuma.token')`); got != srv.Token() {
		t.Errorf("sessionStorage token = %q, want the one from the fragment", got)
	}
	p.wait(`document.querySelector('#start-run') !== null`, "the start-run form")

	// Without a token: a labelled token field, and the pages once it is given.
	q := openPage(t, b, desktop, srv.URL()+"/")
	q.wait(`document.querySelector('input[name=token]') !== null`, "the token field")
	q.do(chromedp.SendKeys(chromedp.CSS("input[name=token]"), "wrong"+kb.Enter))
	q.wait(`document.querySelector('.error[role=alert]') !== null && document.querySelector('input[name=token]')`, "the refused token")
	q.do(chromedp.SendKeys(chromedp.CSS("input[name=token]"), srv.Token()+kb.Enter))
	q.wait(`document.querySelector('#start-run') !== null`, "the runs page after signing in")
}

func TestConsoleRun(t *testing.T) {
	srv := startConsole(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=jobs_file]"), "jobs.yaml"), chromedp.Click(chromedp.CSS("#start-run button[type=submit]")))
	p.wait(`location.hash === '#/runs/run-1'`, "the run page")
	p.wait(`document.querySelectorAll('#jobs tbody tr').length === 3 &&
		[...document.querySelectorAll('#jobs tbody .status .badge')].every(b => b.dataset.status === 'succeeded')`, "three succeeded jobs")
	p.wait(`document.querySelector('#jobs .run-head, .run-head .badge')?.dataset.status === 'succeeded'`, "the run to finish")
	rep := srv.report("run-1")
	for _, j := range rep["jobs"].([]any) {
		job := j.(map[string]any)
		got := eval[string](p, fmt.Sprintf(`document.querySelector('#jobs tr[data-job=%q] .cost').textContent`, job["name"]))
		if want := money(job["cost_usd"].(float64)); got != want {
			t.Errorf("job %s cost %q, want %q", job["name"], got, want)
		}
	}
	totals := rep["totals"].(map[string]any)
	if got, want := eval[string](p, `document.querySelector('#total-cost').textContent`), money(totals["cost_usd"].(float64)); got != want {
		t.Errorf("total cost %q, want %q (report.json)", got, want)
	}
	tok := int(totals["input_tokens"].(float64) + totals["output_tokens"].(float64))
	if got, want := eval[string](p, `document.querySelector('#total-tokens').textContent`), thousands(tok); got != want {
		t.Errorf("total tokens %q, want %q", got, want)
	}
	if got, want := eval[string](p, `document.querySelector('#total-turns').textContent`), fmt.Sprint(totals["num_turns"]); got != want {
		t.Errorf("total turns %q, want %q", got, want)
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

func TestConsoleSession(t *testing.T) {
	srv := startConsole(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "#/sessions")
	p.wait(`document.querySelector('#new-session') !== null`, "the new-session form")
	p.do(chromedp.SendKeys(chromedp.CSS("input[name=repo]"), "/repo"), chromedp.Click(chromedp.CSS("#new-session button[type=submit]")))
	p.wait(`location.hash === '#/sessions/s1'`, "the session page")
	p.wait(`document.querySelector('.conn').dataset.state === 'live'`, "a live connection")

	p.do(chromedp.SendKeys(chromedp.CSS("#composer"), "first line"),
		chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
		chromedp.SendKeys(chromedp.CSS("#composer"), "Fix main.go"+kb.Enter))
	p.wait(`document.querySelector('.msg.streaming')?.textContent.includes('Let me')`, "streamed text")
	p.wait(`document.querySelector('.permission[data-request-id=p1]') !== null`, "the permission card")
	if sent := srv.received("user_message"); len(sent) != 1 || sent[0]["content"] != "first line\nFix main.go" {
		t.Fatalf("user messages sent: %v, want one with two lines", sent)
	}
	if got := eval[string](p, `document.querySelector('.permission .diff').textContent`); !strings.Contains(got, "-// old comment") || !strings.Contains(got, "+// new comment") {
		t.Errorf("the Edit card shows no diff: %q", got)
	}
	p.do(chromedp.Click(chromedp.CSS(".permission .allow")))
	p.wait(`document.querySelector('[data-tool-use-id=tu1] .tool-state').textContent === 'done'`, "the tool's result")
	if got := srv.received("permission_response"); len(got) != 1 || got[0]["request_id"] != "p1" || got[0]["behavior"] != "allow" {
		t.Errorf("permission responses: %v", got)
	}
	p.wait(`document.querySelector('#session-turns').textContent === '2' && document.querySelector('#session-cost').textContent === '$0.0321'`, "turns and cost")
	if got := eval[string](p, `document.querySelector('[data-tool-use-id=tu1] .out').textContent`); !strings.Contains(got, xss) {
		t.Errorf("tool result %q does not show the payload as text", got)
	}
	if !eval[bool](p, noXSS+` && !document.querySelector('#conversation img')`) {
		t.Error("the payload in a tool result ran or made an element")
	}
	counts := func() string {
		return eval[string](p, `JSON.stringify({
			first: [...document.querySelectorAll('.msg.assistant .text')].filter(e => e.textContent === 'Let me look at the file.').length,
			cards: document.querySelectorAll('.permission').length,
			users: [...document.querySelectorAll('.msg.user .text')].map(e => e.textContent),
			done: [...document.querySelectorAll('.msg.assistant .text')].filter(e => e.textContent.startsWith('Done')).length})`)
	}
	before := counts()

	// Restart the server mid-session; events come while it is down and after.
	key := "sessions/s1"
	seen := srv.lastSeq(key)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		srv.Restart(1500*time.Millisecond, func() {
			for _, m := range []string{"m1", "m2", "m3"} {
				srv.emit(key, map[string]any{"type": "user_message", "content": m})
			}
		})
	}()
	p.wait(`document.querySelector('.conn').dataset.state === 'reconnecting' && document.querySelector('.conn').textContent === 'Reconnecting…'`, "the reconnecting state")
	<-restarted
	p.wait(`document.querySelector('.conn').dataset.state === 'live'`, "the connection back")
	srv.emit(key, map[string]any{"type": "user_message", "content": "m4"})
	p.wait(`[...document.querySelectorAll('.msg.user .text')].some(e => e.textContent === 'm4')`, "the event after reconnecting")
	subs := srv.subscribes()
	if len(subs) < 2 || subs[len(subs)-1] != seen {
		t.Errorf("subscribes %v: want the last from seq %d", subs, seen)
	}
	want := strings.Replace(before, `"first line\nFix main.go"]`, `"first line\nFix main.go","m1","m2","m3","m4"]`, 1)
	if got := counts(); got != want {
		t.Errorf("after reconnecting:\n got %s\nwant %s", got, want)
	}
}

func TestConsoleTranscriptXSS(t *testing.T) {
	srv := startConsole(t)
	b := browser.New(t)
	p := loggedIn(t, b, srv, desktop, "#/runs/run-9/jobs/lint")
	p.wait(`document.querySelector('.stream li') !== null`, "the stream tail")
	p.do(chromedp.Click(chromedp.CSS("#tab-diff")))
	p.wait(`document.querySelector('.dl.add') !== null`, "the diff")
	if got := eval[string](p, `document.querySelector('.dl.del').textContent`); !strings.Contains(got, xss) {
		t.Errorf("diff line %q does not show the payload as text", got)
	}
	p.do(chromedp.Click(chromedp.CSS("#tab-transcript")))
	p.wait(`document.querySelector('iframe.transcript') !== null`, "the transcript frame")
	time.Sleep(300 * time.Millisecond) // let the frame load (and fail to run anything)
	if got := eval[string](p, `document.querySelector('iframe.transcript').getAttribute('sandbox')`); got != "" {
		t.Errorf("transcript frame sandbox=%q, want an empty (strictest) sandbox", got)
	}
	p.do(chromedp.Evaluate[chromedp.Void](`location.hash = '#/history/h-1'`))
	p.wait(`document.querySelector('iframe.transcript') !== null`, "the history transcript")
	time.Sleep(300 * time.Millisecond)
	if !eval[bool](p, noXSS+` && !document.querySelector('main img')`) {
		t.Error("a script in a transcript or a tool result ran")
	}
}

// TestConsolePages screenshots every page at 375 and 1280 px, light and
// dark, and checks each with axe-core: no serious or critical violation.
func TestConsolePages(t *testing.T) {
	srv := startConsole(t)
	go srv.playRun("run-0", 0)
	b := browser.New(t)
	axe := browser.AxeSource(t)
	// A session with a conversation and a permission waiting.
	setup := loggedIn(t, b, srv, desktop, "#/sessions")
	setup.do(chromedp.SendKeys(chromedp.CSS("input[name=repo]"), "/repo"), chromedp.Click(chromedp.CSS("#new-session button[type=submit]")))
	setup.wait(`document.querySelector('.conn')?.dataset.state === 'live'`, "the session")
	setup.do(chromedp.SendKeys(chromedp.CSS("#composer"), "Fix main.go"+kb.Enter))
	setup.wait(`document.querySelector('.permission') !== null`, "the permission card")

	pages := []struct{ name, route, ready string }{
		{"runs", "#/runs", `document.querySelector('#runs tr[data-run=run-0]')`},
		{"run", "#/runs/run-0", `document.querySelectorAll('#jobs tbody tr').length === 3`},
		{"job-diff", "#/runs/run-0/jobs/lint", `document.querySelector('.stream li') && (window.__diff || (window.__diff = 1, document.querySelector('#tab-diff').click(), false)) || document.querySelector('.dl.add')`},
		{"sessions", "#/sessions", `document.querySelector('#sessions tbody tr')`},
		{"session", "#/sessions/s1", `document.querySelector('.permission') && document.querySelector('.conn').dataset.state === 'live'`},
		{"history", "#/history", `document.querySelector('#history tbody tr') && document.querySelector('svg.chart')`},
		{"transcript", "#/history/h-1", `document.querySelector('iframe.transcript')`},
		{"signin", "#/runs", `(sessionStorage.clear(), dispatchEvent(new HashChangeEvent('hashchange')), true) && document.querySelector('input[name=token]')`},
	}
	dir := filepath.Join("testdata", "screenshots")
	for _, v := range []browser.Viewport{{Width: 375, Height: 812}, {Width: 375, Height: 812, Dark: true}, desktop, {Width: 1280, Height: 900, Dark: true}} {
		p := loggedIn(t, b, srv, v, "")
		for _, pg := range pages {
			p.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf("location.hash = %q", pg.route)))
			p.wait(pg.ready, pg.name)
			time.Sleep(150 * time.Millisecond) // fonts and layout settle
			browser.Screenshot(t, p.ctx, filepath.Join(dir, fmt.Sprintf("%s-%s.png", pg.name, v)))
			for _, viol := range browser.Axe(t, p.ctx, axe) {
				t.Errorf("%s at %s: %s", pg.name, v, viol)
			}
			if w := eval[int](p, `document.documentElement.scrollWidth`); w > int(v.Width) {
				t.Errorf("%s at %s: the page is %d px wide: it scrolls sideways", pg.name, v, w)
			}
		}
	}
}
