package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// eventLog records a run's events.
type eventLog struct {
	mu  sync.Mutex
	evs []runner.Event
}

func (e *eventLog) Event(ev runner.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

func (e *eventLog) of(typ string) []runner.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []runner.Event
	for _, ev := range e.evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (b *bed) runWith(p *runner.Plan, o runner.Options) *report.Report {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	o.Environ, o.StopGrace, o.RetryBackoff = b.env.Environ(), 500*time.Millisecond, 10*time.Millisecond
	rep, err := runner.Run(ctx, p, o)
	rep = loadReport(b.t, rep)
	if err != nil {
		b.t.Fatalf("run: %v", err)
	}
	validateReport(b.t, runner.RunReportPath(p))
	return rep
}

// subscription makes the CLI use subscription auth, the only one under
// which it honours the unified rate-limit headers.
var subscription = []claudetest.EnvOption{claudetest.WithVar("ANTHROPIC_API_KEY", ""),
	claudetest.WithVar("CLAUDE_CODE_OAUTH_TOKEN", "oauth-test-token"), claudetest.WithMaxRetries(0)}

func TestUsageLimitWaitsThenHeldJobsContinue(t *testing.T) {
	b := newBed(t, subscription...)
	repo := claudetest.GitRepo(t)
	// The reset is a few seconds after the limit is answered, not after the
	// test starts: on a loaded machine the CLI may take longer than that to
	// ask, and a reset already past is no limit to the CLI.
	var mu sync.Mutex
	var reset time.Time
	limited, secondStart := false, time.Time{}
	b.jobs["TOKEN-FIRST"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if !limited {
			limited = true
			reset = time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
			return fakeapi.UsageLimit(reset)
		}
		return fakeapi.Text("first done").WithRateLimit(fakeapi.RateLimit{Status: "allowed", Utilization: 0.2, Reset: reset.Add(5 * time.Hour)})
	}
	b.jobs["TOKEN-SECOND"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if secondStart.IsZero() {
			secondStart = time.Now()
		}
		return fakeapi.Text("second done")
	}
	p := b.plan(repo, `version: 1
concurrency: 1
limits: {wait: true, max_wait: 1m}
jobs:
  - name: first
    prompt: TOKEN-FIRST go
  - name: second
    prompt: TOKEN-SECOND go
`)
	evs := &eventLog{}
	rep := b.runWith(p, runner.Options{Reporter: evs})
	mu.Lock()
	defer mu.Unlock()
	first, second := jobByName(t, rep, "first"), jobByName(t, rep, "second")
	if first.Status != report.StatusSucceeded || len(first.Attempts) != 2 || first.Attempts[0].Reason != report.ReasonUsageLimit {
		t.Fatalf("first: %s/%s %s, attempts %+v", first.Status, first.Reason, first.Error, first.Attempts)
	}
	if first.Attempts[0].SessionID == "" || first.Attempts[1].SessionID != first.Attempts[0].SessionID {
		t.Errorf("the held job did not continue its session: %+v", first.Attempts)
	}
	if second.Status != report.StatusSucceeded || secondStart.Before(reset) {
		t.Errorf("second: %s, started %v before the reset %v", second.Status, secondStart, reset)
	}
	waits := evs.of(runner.EventUsageLimitWait)
	if len(waits) != 1 || !strings.HasPrefix(waits[0].Message, "usage limit reached; waiting until ") ||
		!strings.HasSuffix(waits[0].Message, "to resume 2 jobs") || waits[0].ResumeAt == nil || !waits[0].ResumeAt.Equal(reset) {
		t.Errorf("wait events %+v", waits)
	}
	// The CLI passes utilization on only with allowed_warning and above.
	if rl := first.RateLimit; rl == nil || rl.Status != "allowed" || rl.Type != "five_hour" || rl.ResetsAt.IsZero() {
		t.Errorf("job rate_limit %+v", rl)
	}
	if rep.RateLimit == nil {
		t.Errorf("run rate_limit missing")
	}
}

func TestUsageLimitBeyondMaxWaitFailsAndHoldsTheRest(t *testing.T) {
	b := newBed(t, subscription...)
	repo := claudetest.GitRepo(t)
	reset := time.Now().Add(2 * time.Hour)
	var mu sync.Mutex
	limited := true
	b.jobs["TOKEN-LIM"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if limited {
			return fakeapi.UsageLimit(reset)
		}
		return fakeapi.Text("done after the reset")
	}
	p := b.plan(repo, `version: 1
concurrency: 1
limits: {max_wait: 1h}
jobs:
  - name: a
    prompt: TOKEN-LIM one
  - name: b
    prompt: TOKEN-LIM two
`)
	rep := b.runWith(p, runner.Options{})
	a, bj := jobByName(t, rep, "a"), jobByName(t, rep, "b")
	if a.Status != report.StatusFailed || a.Reason != report.ReasonUsageLimit {
		t.Errorf("a: %s/%s", a.Status, a.Reason)
	}
	if bj.Status != report.StatusSkipped || bj.Reason != report.ReasonUsageLimit || len(b.api.Requests()) != 1 {
		t.Errorf("b: %s/%s after %d requests", bj.Status, bj.Reason, len(b.api.Requests()))
	}
	if want := "not started: the account's usage limit is reached and it resets at "; !strings.HasPrefix(bj.Error, want) || !strings.HasSuffix(bj.Error, "beyond limits.max_wait (1h0m0s)") {
		t.Errorf("b: error %q", bj.Error)
	}

	// After the reset, --resume continues the failed job in its session and
	// starts the one that never ran.
	mu.Lock()
	limited = false
	mu.Unlock()
	jr, err := runner.ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	jr.Plan.Binary = b.bin
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	rep, err = runner.Resume(ctx, jr.Plan, jr, runner.Options{Environ: b.env.Environ(), StopGrace: 500 * time.Millisecond, RetryBackoff: 10 * time.Millisecond})
	rep = loadReport(t, rep)
	if err != nil {
		t.Fatal(err)
	}
	a, bj = jobByName(t, rep, "a"), jobByName(t, rep, "b")
	if rep.Status != report.RunSucceeded || a.Status != report.StatusSucceeded || bj.Status != report.StatusSucceeded {
		t.Fatalf("resumed run %s: a %s/%s %q, b %s/%s %q", rep.Status, a.Status, a.Reason, a.Error, bj.Status, bj.Reason, bj.Error)
	}
	if len(a.Attempts) != 2 || a.Attempts[0].Reason != report.ReasonUsageLimit || a.Attempts[1].SessionID != a.Attempts[0].SessionID {
		t.Errorf("a did not continue its session: %+v", a.Attempts)
	}
}

func TestOverloadStormHalvesConcurrencyThenRecovers(t *testing.T) {
	b := newBed(t, claudetest.WithMaxRetries(0))
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	n := 0
	b.jobs["TOKEN-STORM"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if n++; n <= 4 {
			return fakeapi.Error(529, "overloaded_error", "Overloaded")
		}
		return fakeapi.Text("ok")
	}
	var jobs strings.Builder
	for i := range 6 {
		jobs.WriteString("  - name: j" + string(rune('a'+i)) + "\n    prompt: TOKEN-STORM " + string(rune('a'+i)) + "\n")
	}
	p := b.plan(repo, "version: 1\nconcurrency: 4\ndefaults: {retries: 2}\njobs:\n"+jobs.String())
	evs := &eventLog{}
	rep := b.runWith(p, runner.Options{Reporter: evs, StormWindow: time.Minute, RecoverAfter: 300 * time.Millisecond})
	if rep.Totals.Succeeded != 6 {
		t.Errorf("succeeded %d of 6", rep.Totals.Succeeded)
	}
	var steps []string
	for _, ev := range evs.of(runner.EventConcurrency) {
		steps = append(steps, ev.Reason+":"+string(rune('0'+ev.Concurrency)))
	}
	got := strings.Join(steps, " ")
	if !strings.HasPrefix(got, "overloaded:2 recovered:3 recovered:4") && !strings.HasPrefix(got, "overloaded:2 overloaded:1") {
		t.Errorf("concurrency changes %q", got)
	}
}

func TestSuspectSuccessesAndStructuredOutput(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-NOCHANGE"] = func(r *fakeapi.Request, dir string) fakeapi.Response { return fakeapi.Text("Nothing to do.") }
	ask := func(r *fakeapi.Request, dir string) fakeapi.Response {
		return fakeapi.Text("I looked at the code.\n\nShould I also update the tests?")
	}
	b.jobs["TOKEN-ASK1"], b.jobs["TOKEN-ASK2"] = ask, ask
	b.jobs["TOKEN-JSON"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("done")
		}
		return fakeapi.ToolUse(fakeapi.Tool("StructuredOutput", map[string]any{"n": 3}))
	}
	schema := filepath.Join(repo, "schema.json")
	if err := os.WriteFile(schema, []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: nochange
    prompt: TOKEN-NOCHANGE
    expect: {changes: true}
  - name: asks
    prompt: TOKEN-ASK1
  - name: asks-strict
    prompt: TOKEN-ASK2
    expect: {no_questions: true}
  - name: json
    prompt: TOKEN-JSON
    output_schema: schema.json
`)
	rep := b.run(p)
	if j := jobByName(t, rep, "nochange"); j.Status != report.StatusFailed || j.Reason != report.ReasonNoChanges {
		t.Errorf("nochange: %s/%s", j.Status, j.Reason)
	}
	if j := jobByName(t, rep, "asks"); j.Status != report.StatusSucceeded || len(j.Warnings) != 1 || j.Warnings[0].Code != report.WarnAskedQuestion {
		t.Errorf("asks: %s warnings %+v", j.Status, j.Warnings)
	}
	if j := jobByName(t, rep, "asks-strict"); j.Status != report.StatusFailed || j.Reason != report.ReasonAskedQuestion {
		t.Errorf("asks-strict: %s/%s", j.Status, j.Reason)
	}
	j := jobByName(t, rep, "json")
	// The report's jobs are read back from report.json, which is indented.
	var out bytes.Buffer
	if err := json.Compact(&out, j.StructuredOutput); err != nil || j.Status != report.StatusSucceeded || out.String() != `{"n":3}` {
		t.Fatalf("json: %s/%s %s output %s", j.Status, j.Reason, j.Error, j.StructuredOutput)
	}
	var args []string
	for _, pj := range p.Jobs {
		if pj.Name == "json" {
			args = pj.Args()
			data, err := os.ReadFile(runner.JobDir(pj.JobDir).Output())
			var v map[string]any
			if err != nil || json.Unmarshal(data, &v) != nil || v["n"] != 3.0 {
				t.Errorf("output.json: %s, %v", data, err)
			}
		}
	}
	if !strings.Contains(strings.Join(args, " "), "--json-schema {") {
		t.Errorf("args %q", args)
	}
}

func TestFallbackModelServes(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	b.jobs["TOKEN-FB"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		if strings.Contains(r.Model, "haiku") {
			return fakeapi.Text("served by the fallback")
		}
		return fakeapi.Error(529, "overloaded_error", "Overloaded")
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: fb
    prompt: TOKEN-FB go
    fallback_model: claude-haiku-4-5
`)
	rep := b.run(p)
	j := rep.Jobs[0]
	if j.Status != report.StatusSucceeded || j.FallbackModel != "claude-haiku-4-5" || !strings.Contains(j.Model, "haiku") {
		t.Errorf("fb: %s/%s %s, model %q fallback %q", j.Status, j.Reason, j.Error, j.Model, j.FallbackModel)
	}
}

// brokenMCP is an MCP config naming stdio servers that cannot start: one
// whose command does not exist, one that exits at once. The CLI (2.1.197)
// lists both as failed in its init line, which it writes only once the
// first prompt is in, and sends that prompt to the API regardless.
const brokenMCP = `{"mcpServers":{"gone":{"command":"/nonexistent/pneuma-mcp-server"},"quits":{"command":"false"}}}`

func TestFailedMCPServer(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	asked := map[string]int{}
	for _, token := range []string{"TOKEN-MCPWARN", "TOKEN-MCPSTRICT"} {
		b.jobs[token] = func(r *fakeapi.Request, dir string) fakeapi.Response {
			mu.Lock()
			defer mu.Unlock()
			asked[token]++
			return fakeapi.Text("done without the server")
		}
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: warn
    prompt: TOKEN-MCPWARN go
    mcp_config: '`+brokenMCP+`'
  - name: strict
    prompt: TOKEN-MCPSTRICT go
    mcp_config: '`+brokenMCP+`'
    expect: {mcp: true}
`)
	rep := b.run(p)
	mu.Lock()
	defer mu.Unlock()
	warn := jobByName(t, rep, "warn")
	if warn.Status != report.StatusSucceeded || len(warn.Warnings) != 1 || warn.Warnings[0].Code != report.WarnMCPFailed ||
		!strings.Contains(warn.Warnings[0].Message, "gone (failed)") || !strings.Contains(warn.Warnings[0].Message, "quits (failed)") {
		t.Errorf("warn: %s/%s, warnings %+v", warn.Status, warn.Reason, warn.Warnings)
	}
	if asked["TOKEN-MCPWARN"] != 1 {
		t.Errorf("warn: the API answered %d requests, want 1", asked["TOKEN-MCPWARN"])
	}
	strict := jobByName(t, rep, "strict")
	if strict.Status != report.StatusFailed || strict.Reason != report.ReasonMCPFailed ||
		!strings.Contains(strict.Error, "gone (failed: ENOENT") { // quits may still be starting: no need to wait for it
		t.Errorf("strict: %s/%s %q", strict.Status, strict.Reason, strict.Error)
	}
	if asked["TOKEN-MCPSTRICT"] != 0 || strict.CostUSD != 0 || len(strict.Attempts) != 1 {
		t.Errorf("strict: %d API requests, cost %v, attempts %+v; want it stopped before its first prompt",
			asked["TOKEN-MCPSTRICT"], strict.CostUSD, strict.Attempts)
	}
	if len(strict.Warnings) != 1 || strict.Warnings[0].Code != report.WarnMCPFailed {
		t.Errorf("strict warnings %+v", strict.Warnings)
	}
}

// The CLI (2.1.197) validates the StructuredOutput call against
// --json-schema itself: it refuses invalid input with an error tool_result
// ("Output does not match required schema: /n: must be integer"), and after
// five refused calls ends with a result of subtype
// error_max_structured_output_retries.
func TestInvalidStructuredOutput(t *testing.T) {
	b := newBed(t)
	repo := claudetest.GitRepo(t)
	var mu sync.Mutex
	calls := 0
	b.jobs["TOKEN-BADJSON"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls > 20 {
			return fakeapi.Text("giving up") // the CLI gave up long before
		}
		return fakeapi.ToolUse(fakeapi.Tool("StructuredOutput", map[string]any{"n": "three"}))
	}
	p := b.plan(repo, `version: 1
jobs:
  - name: bad
    prompt: TOKEN-BADJSON
    retries: 2
    output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
`)
	rep := b.run(p)
	j := jobByName(t, rep, "bad")
	if j.Status != report.StatusFailed || j.Reason != report.ReasonInvalidOutput ||
		!strings.Contains(j.Error, "no valid structured output") || !strings.Contains(j.Error, "/n: must be integer") {
		t.Errorf("bad: %s/%s %q", j.Status, j.Reason, j.Error)
	}
	if len(j.Attempts) != 1 || len(j.StructuredOutput) != 0 {
		t.Errorf("bad: attempts %+v, structured_output %s; want one attempt (not retried) and no output", j.Attempts, j.StructuredOutput)
	}
	if _, err := os.Stat(runner.JobDir(p.Jobs[0].JobDir).Output()); !os.IsNotExist(err) {
		t.Errorf("output.json written for invalid output (stat: %v)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls < 2 || calls > 20 {
		t.Errorf("the API answered %d StructuredOutput calls; the CLI retries a refused one a few times", calls)
	}
	t.Logf("the CLI gave up after %d calls", calls)
}

func TestReserveUtilizationStopsNewJobs(t *testing.T) {
	b := newBed(t, subscription...)
	repo := claudetest.GitRepo(t)
	reset := time.Now().Add(3 * time.Hour)
	var mu sync.Mutex
	asked := map[string]int{}
	for _, token := range []string{"TOKEN-RSV1", "TOKEN-RSV2", "TOKEN-RSV3"} {
		b.jobs[token] = func(r *fakeapi.Request, dir string) fakeapi.Response {
			mu.Lock()
			defer mu.Unlock()
			asked[token]++
			// The CLI passes utilization on only from allowed_warning up.
			return fakeapi.Text("done").WithRateLimit(fakeapi.RateLimit{Status: "allowed_warning", Utilization: 0.95, Reset: reset})
		}
	}
	p := b.plan(repo, `version: 1
concurrency: 1
limits: {reserve_utilization: 0.8}
jobs:
  - name: first
    prompt: TOKEN-RSV1 go
  - name: second
    prompt: TOKEN-RSV2 go
  - name: third
    prompt: TOKEN-RSV3 go
`)
	evs := &eventLog{}
	rep := b.runWith(p, runner.Options{Reporter: evs})
	const why = "utilization 95% of the five_hour limit is past limits.reserve_utilization 80%"
	if j := jobByName(t, rep, "first"); j.Status != report.StatusSucceeded {
		t.Errorf("first: %s/%s %s", j.Status, j.Reason, j.Error)
	}
	for _, name := range []string{"second", "third"} {
		if j := jobByName(t, rep, name); j.Status != report.StatusSkipped || j.Reason != report.ReasonUsageLimit || j.Error != "not started: "+why {
			t.Errorf("%s: %s/%s %q", name, j.Status, j.Reason, j.Error)
		}
	}
	mu.Lock()
	if asked["TOKEN-RSV2"]+asked["TOKEN-RSV3"] != 0 {
		t.Errorf("held jobs reached the API: %v", asked)
	}
	mu.Unlock()
	if rsv := evs.of(runner.EventUsageReserve); len(rsv) != 1 || rsv[0].Job != "first" || !strings.HasPrefix(rsv[0].Message, why) {
		t.Errorf("usage_reserve events %+v", rsv)
	}
	if len(rep.Warnings) != 1 || rep.Warnings[0].Code != report.WarnUsageReserve || !strings.HasPrefix(rep.Warnings[0].Message, why) {
		t.Errorf("run warnings %+v", rep.Warnings)
	}
	if rl := rep.RateLimit; rep.Status != report.RunFailed || rl == nil || rl.Status != "allowed_warning" || rl.Utilization == nil || *rl.Utilization != 0.95 {
		t.Errorf("run %s, rate_limit %+v", rep.Status, rl)
	}
}

// waitHook calls fn on the usage_limit_wait event.
type waitHook struct {
	eventLog
	fn func()
}

func (h *waitHook) Event(ev runner.Event) {
	h.eventLog.Event(ev)
	if ev.Type == runner.EventUsageLimitWait {
		h.fn()
	}
}

// Ctrl-C while a run waits for a usage limit's reset (cmd/signal.go cancels
// the run's context) ends the run at once: the held job is interrupted,
// the job not started is skipped, and --resume continues both, the held job
// in its session. The interrupt comes as the wait begins (the run must not
// start waiting) or during it.
func TestInterruptDuringUsageLimitWait(t *testing.T) {
	for _, after := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) { interruptUsageLimitWait(t, after, runner.KeepOnFailure) })
	}
	// The interrupted job's worktree removed: the resume checks its branch
	// out again, with whatever it committed.
	t.Run("keep never", func(t *testing.T) { interruptUsageLimitWait(t, 0, runner.KeepNever) })
}

func interruptUsageLimitWait(t *testing.T, after time.Duration, keep runner.KeepPolicy) {
	b := newBed(t, subscription...)
	repo := claudetest.GitRepo(t)
	reset := time.Now().Add(time.Hour)
	var mu sync.Mutex
	limited := false
	b.jobs["TOKEN-HELD"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
		mu.Lock()
		defer mu.Unlock()
		if !limited {
			limited = true
			return fakeapi.UsageLimit(reset)
		}
		return fakeapi.Text("held done")
	}
	b.jobs["TOKEN-LATER"] = func(r *fakeapi.Request, dir string) fakeapi.Response { return fakeapi.Text("later done") }
	p := b.plan(repo, `version: 1
concurrency: 1
limits: {max_wait: 2h}
jobs:
  - name: held
    prompt: TOKEN-HELD go
  - name: later
    prompt: TOKEN-LATER go
`)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	cancelled := make(chan time.Time, 1)
	interrupt := func() { cancelled <- time.Now(); cancel() }
	hook := &waitHook{fn: func() {
		if after == 0 {
			interrupt()
			return
		}
		time.AfterFunc(after, interrupt)
	}}
	opts := runner.Options{Environ: b.env.Environ(), StopGrace: 500 * time.Millisecond, RetryBackoff: 10 * time.Millisecond, Reporter: hook, Keep: keep}
	rep, err := runner.Run(ctx, p, opts)
	rep = loadReport(t, rep)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-cancelled:
		if took := time.Since(at); took > 10*time.Second {
			t.Errorf("the run ended %s after it was interrupted", took)
		}
	default:
		t.Fatalf("the run ended without waiting for the reset: %s, jobs %+v", rep.Status, rep.Jobs)
	}
	held, later := jobByName(t, rep, "held"), jobByName(t, rep, "later")
	if rep.Status != report.RunInterrupted || held.Status != report.StatusInterrupted || held.Reason != report.ReasonInterrupted ||
		len(held.Attempts) != 1 || held.Attempts[0].Reason != report.ReasonUsageLimit || held.SessionID == "" { // the wait is no attempt
		t.Fatalf("run %s; held: %s/%s %q, attempts %+v", rep.Status, held.Status, held.Reason, held.Error, held.Attempts)
	}
	if later.Status != report.StatusSkipped || later.Reason != report.ReasonInterrupted {
		t.Errorf("later: %s/%s", later.Status, later.Reason)
	}
	if n := len(b.api.Requests()); n != 1 {
		t.Errorf("the API saw %d requests, want only the one that hit the limit", n)
	}

	// --resume continues what the interrupt stopped.
	jr, err := runner.ReadJournal(p.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	jr.Plan.Binary = b.bin
	opts.Reporter = nil
	ctx2, cancel2 := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel2()
	rep, err = runner.Resume(ctx2, jr.Plan, jr, opts)
	rep = loadReport(t, rep)
	if err != nil {
		t.Fatal(err)
	}
	held, later = jobByName(t, rep, "held"), jobByName(t, rep, "later")
	if rep.Status != report.RunSucceeded || held.Status != report.StatusSucceeded || later.Status != report.StatusSucceeded {
		t.Fatalf("resumed run %s: held %s/%s %q, later %s/%s %q", rep.Status, held.Status, held.Reason, held.Error, later.Status, later.Reason, later.Error)
	}
	if len(held.Attempts) != 2 || held.Attempts[1].SessionID != held.Attempts[0].SessionID || held.Result != "held done" {
		t.Errorf("held did not continue its session: %+v", held.Attempts)
	}
}
