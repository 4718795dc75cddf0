package telemetry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/telemetry"
)

const e2eTimeout = 3 * time.Minute

// envOutput is what the CLI's Bash tool printed for `env`, seen by the
// fake API in the tool result.
type envOutput struct {
	mu  sync.Mutex
	out string
	// proc is the environment the CLI process started with
	// (/proc/<pid>/environ), found by the run's API key: the CLI keeps
	// OTEL_* variables from its tools' environment.
	proc   []string
	apiKey string
}

// readProc finds the CLI of job ok among the processes and keeps its
// environment.
func (e *envOutput) readProc() {
	dirs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, path := range dirs {
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte("ANTHROPIC_API_KEY="+e.apiKey)) || !bytes.Contains(data, []byte("pneuma.job=ok")) {
			continue
		}
		e.mu.Lock()
		e.proc = strings.Split(string(data), "\x00")
		e.mu.Unlock()
		return
	}
}

// threeJobs scripts a run of three jobs: ok runs `env` through Bash (a
// tool call the policy allows), flaky meets two 529s (the CLI's own retry,
// then pneuma's) and then succeeds, broken fails on a 500.
func threeJobs(env *envOutput) fakeapi.Handler {
	var mu sync.Mutex
	flaky := 0
	return func(r *fakeapi.Request) fakeapi.Response {
		prompt := r.FirstUser().Text()
		switch {
		case strings.Contains(prompt, "TOKEN-OK"):
			if res := r.ToolResults(); len(res) > 0 {
				env.mu.Lock()
				env.out = r.LastUser().Text() + string(res[0].Content)
				env.mu.Unlock()
				return fakeapi.Text("done").WithUsage(fakeapi.Usage{Input: 300, Output: 40, CacheRead: 1000})
			}
			env.readProc()
			return fakeapi.ToolUse(fakeapi.Bash("env")).WithUsage(fakeapi.Usage{Input: 200, Output: 30})
		case strings.Contains(prompt, "TOKEN-FLAKY"):
			mu.Lock()
			flaky++
			n := flaky
			mu.Unlock()
			if n <= 2 {
				return fakeapi.Error(529, "overloaded_error", "Overloaded")
			}
			return fakeapi.Text("finally").WithUsage(fakeapi.Usage{Input: 120, Output: 12})
		case strings.Contains(prompt, "TOKEN-BROKEN"):
			return fakeapi.Error(500, "api_error", "boom").WithHeader("x-should-retry", "false")
		}
		return fakeapi.Text("no script for this prompt")
	}
}

const threeJobsYAML = `version: 1
concurrency: 3
defaults:
  permission_mode: acceptEdits
jobs:
  - name: ok
    prompt: TOKEN-OK print the environment
    policy:
      allow: ["Bash(env)"]
  - name: flaky
    prompt: TOKEN-FLAKY try hard
    retries: 1
    env:
      CLAUDE_CODE_MAX_RETRIES: "1"
  - name: broken
    prompt: TOKEN-BROKEN fail
`

// runWithTelemetry runs the three jobs on the real CLI with telemetry
// exporting to endpoint over proto, and returns the report.
func runWithTelemetry(t *testing.T, proto, endpoint string, env *envOutput) *report.Report {
	t.Helper()
	bin := claudetest.Binary(t)
	api := fakeapi.New(t, threeJobs(env))
	cenv := claudetest.NewEnv(t, api.URL, claudetest.WithMaxRetries(0), claudetest.WithVar("OTEL_RESOURCE_ATTRIBUTES", "team=core"))
	env.apiKey = cenv.APIKey
	repo := claudetest.GitRepo(t)
	path := filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte(threeJobsYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := jobfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	p, err := runner.BuildPlan(ctx, f, runner.PlanOptions{RunID: "e2e", Binary: bin, Stagger: -1, Getenv: getter(cenv.Environ()), IsRoot: os.Geteuid() == 0})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.Setup(ctx, telemetry.Config{Version: "test", Getenv: getter([]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto, "OTEL_SERVICE_NAME=pneuma-e2e",
	})})
	if err != nil {
		t.Fatal(err)
	}
	o := runner.Options{Environ: cenv.Environ(), StopGrace: 500 * time.Millisecond, RetryBackoff: 10 * time.Millisecond}
	tel.Wire(&o)
	if o.Observer == nil {
		t.Fatal("telemetry is on, but Wire set no observer")
	}
	rep, err := runner.Run(ctx, p, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	return rep
}

func TestE2ETraceTreeHTTP(t *testing.T) {
	rc, url := httpReceiver(t)
	var env envOutput
	rep := runWithTelemetry(t, "http/protobuf", url, &env)
	spans, metrics, res := rc.snapshot()
	if len(rc.bad) > 0 {
		t.Errorf("bad requests: %v", rc.bad)
	}
	if got := attr(res, "service.name"); got != "pneuma-e2e" {
		t.Errorf("service.name %q", got)
	}
	checkTree(t, spans, rep, &env)
	checkMetrics(t, metrics, rep)
}

func TestE2ETraceTreeGRPC(t *testing.T) {
	rc, url := grpcReceiver(t)
	var env envOutput
	rep := runWithTelemetry(t, "grpc", url, &env)
	spans, metrics, _ := rc.snapshot()
	checkTree(t, spans, rep, &env)
	checkMetrics(t, metrics, rep)
}

// checkTree asserts the span tree of the three jobs.
func checkTree(t *testing.T, spans []*tracepb.Span, rep *report.Report, env *envOutput) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.SpanId)] = s
	}
	parent := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.ParentSpanId)] }
	runs := named(spans, telemetry.SpanRun)
	if len(runs) != 1 {
		t.Fatalf("%d run spans among %d spans", len(runs), len(spans))
	}
	run := runs[0]
	if attrOf(run, "pneuma.run_id") != "e2e" || attrOf(run, "pneuma.status") != report.RunFailed || run.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("run span: %v status %v", run.Attributes, run.Status)
	}
	jobs := map[string]*tracepb.Span{}
	for _, s := range named(spans, telemetry.SpanJob) {
		if parent(s) != run {
			t.Errorf("job span %s is not under the run span", attrOf(s, "pneuma.job"))
		}
		jobs[attrOf(s, "pneuma.job")] = s
	}
	if len(jobs) != 3 {
		t.Fatalf("job spans %v", keys(jobs))
	}
	for _, j := range rep.Jobs {
		s := jobs[j.Name]
		if attrOf(s, "pneuma.status") != j.Status || attrOf(s, "pneuma.reason") != j.Reason || attrOf(s, "gen_ai.system") != "anthropic" {
			t.Errorf("job %s span: %v, report %s/%s", j.Name, s.Attributes, j.Status, j.Reason)
		}
		if got := floatOf(s, "pneuma.cost_usd"); math.Abs(got-j.CostUSD) > 1e-12 {
			t.Errorf("job %s span cost %v, report %v", j.Name, got, j.CostUSD)
		}
		if got := intOf(s, "gen_ai.usage.input_tokens"); got != j.Usage.InputTokens {
			t.Errorf("job %s span input tokens %d, report %d", j.Name, got, j.Usage.InputTokens)
		}
	}
	broken := jobs["broken"]
	if broken.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || !strings.Contains(broken.Status.GetMessage(), "500") {
		t.Errorf("failed job's span status %v", broken.Status)
	}
	if jobs["ok"].Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("ok job's span status %v", jobs["ok"].Status)
	}
	// Attempts under their job, turns under their attempt.
	attempts := map[string]int{}
	for _, a := range named(spans, telemetry.SpanAttempt) {
		attempts[attrOf(parent(a), "pneuma.job")]++
		if parent(a) == nil || parent(a).Name != telemetry.SpanJob {
			t.Errorf("attempt span not under a job span")
		}
	}
	if attempts["flaky"] != 2 || attempts["ok"] != 1 || attempts["broken"] != 1 {
		t.Errorf("attempts per job %v", attempts)
	}
	for _, turn := range named(spans, telemetry.SpanTurn) {
		if p := parent(turn); p == nil || p.Name != telemetry.SpanAttempt {
			t.Errorf("turn span of %s not under an attempt", attrOf(turn, "pneuma.job"))
		}
	}
	// The tool call under its turn, with its decision and a redacted input.
	tools := named(spans, telemetry.SpanTool+" Bash")
	if len(tools) != 1 {
		t.Fatalf("%d Bash tool spans", len(tools))
	}
	tool := tools[0]
	turn := parent(tool)
	if turn == nil || turn.Name != telemetry.SpanTurn || attrOf(parent(parent(turn)), "pneuma.job") != "ok" {
		t.Errorf("tool span's parent %v", turn)
	}
	if attrOf(tool, "pneuma.tool.decision") != "allow" || attrOf(tool, "pneuma.tool.decided_by") != "pneuma" ||
		attrOf(tool, "pneuma.tool.rule") == "" || attrOf(tool, "gen_ai.tool.name") != "Bash" || !strings.Contains(attrOf(tool, "pneuma.tool.input"), "env") {
		t.Errorf("tool span attributes %v", tool.Attributes)
	}
	if tool.EndTimeUnixNano < tool.StartTimeUnixNano {
		t.Errorf("tool span ends before it starts")
	}
	// The retries: the CLI's own (api_retry, 529) and pneuma's (job_retry).
	if !hasEvent(jobs["flaky"], "job_retry") {
		t.Errorf("flaky job span has no job_retry event: %v", jobs["flaky"].Events)
	}
	apiRetry := false
	for _, a := range named(spans, telemetry.SpanAttempt) {
		for _, ev := range a.Events {
			if ev.Name == "api_retry" && intAttr(ev.Attributes, "http.response.status_code") == 529 {
				apiRetry = true
			}
		}
	}
	if !apiRetry {
		t.Errorf("no api_retry event with status 529 on an attempt span")
	}
	checkCLIEnv(t, env, jobs["ok"])
	checkNoSecrets(t, spans)
}

// checkCLIEnv: the CLI of job ok saw pneuma's resource attributes after
// the user's, and its job span as TRACEPARENT.
func checkCLIEnv(t *testing.T, env *envOutput, job *tracepb.Span) {
	t.Helper()
	env.mu.Lock()
	out, proc := env.out, strings.Join(env.proc, "\n")
	env.mu.Unlock()
	if !strings.Contains(proc, "\nOTEL_RESOURCE_ATTRIBUTES=team=core,pneuma.run_id=e2e,pneuma.job=ok\n") {
		t.Errorf("the CLI's OTEL_RESOURCE_ATTRIBUTES is not the user's plus pneuma's:\n%s", grepLines(proc, "OTEL"))
	}
	want := "TRACEPARENT=00-" + hex.EncodeToString(job.TraceId) + "-" + hex.EncodeToString(job.SpanId) + "-01"
	if !strings.Contains(proc, want) {
		t.Errorf("the CLI's environment lacks %s:\n%s", want, grepLines(proc, "TRACEPARENT"))
	}
	// Its tools see the trace too (the CLI passes TRACEPARENT on).
	if !strings.Contains(out, want) {
		t.Errorf("the CLI's Bash tool did not see %s:\n%s", want, grepLines(out, "TRACEPARENT"))
	}
	if strings.Contains(proc, "CLAUDE_CODE_ENABLE_TELEMETRY") {
		t.Errorf("pneuma turned the CLI's telemetry on")
	}
}

// checkNoSecrets: the fake API key appears in no attribute.
func checkNoSecrets(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	for _, s := range spans {
		for _, a := range s.Attributes {
			if strings.Contains(a.Value.GetStringValue(), "sk-test-") {
				t.Errorf("span %s attribute %s holds the API key", s.Name, a.Key)
			}
		}
	}
}

// checkMetrics: the exported sums equal the report's totals.
func checkMetrics(t *testing.T, ms []*metricspb.Metric, rep *report.Report) {
	t.Helper()
	if got := sumMetric(ms, telemetry.MetricCost, nil); math.Abs(got-rep.Totals.CostUSD) > 1e-9 || got == 0 {
		t.Errorf("cost metric %v, report %v", got, rep.Totals.CostUSD)
	}
	for kind, want := range map[string]int64{"input": rep.Totals.InputTokens, "output": rep.Totals.OutputTokens, "cache_read": rep.Totals.CacheReadInputTokens} {
		if got := sumMetric(ms, telemetry.MetricTokens, map[string]string{"kind": kind}); int64(got) != want {
			t.Errorf("%s tokens metric %v, report %d", kind, got, want)
		}
	}
	if got := sumMetric(ms, telemetry.MetricJobsFinished, nil); int(got) != rep.Totals.Jobs {
		t.Errorf("jobs finished %v, report %d", got, rep.Totals.Jobs)
	}
	if got := sumMetric(ms, telemetry.MetricJobsFinished, map[string]string{"status": "failed"}); int(got) != rep.Totals.Failed {
		t.Errorf("failed jobs %v, report %d", got, rep.Totals.Failed)
	}
	if got := sumMetric(ms, telemetry.MetricToolCalls, map[string]string{"tool": "Bash", "decision": "allow"}); got != 1 {
		t.Errorf("Bash tool calls allowed %v", got)
	}
	if got := sumMetric(ms, telemetry.MetricAPIErrors, map[string]string{"status": "529"}); got < 2 {
		t.Errorf("529s seen %v, want 2 at least", got)
	}
	if got := sumMetric(ms, telemetry.MetricJobsRunning, nil); got != 0 {
		t.Errorf("jobs running after the run: %v", got)
	}
}

// sumMetric sums the latest points of a cumulative metric (the last export
// holds the totals) whose attributes include want; histograms count.
func sumMetric(ms []*metricspb.Metric, name string, want map[string]string) float64 {
	var last *metricspb.Metric
	for _, m := range ms {
		if m.Name == name {
			last = m
		}
	}
	if last == nil {
		return 0
	}
	match := func(kvs []*commonpb.KeyValue) bool {
		for k, v := range want {
			if attrString(kvs, k) != v {
				return false
			}
		}
		return true
	}
	total := 0.0
	if s := last.GetSum(); s != nil {
		for _, p := range s.DataPoints {
			if match(p.Attributes) {
				total += p.GetAsDouble() + float64(p.GetAsInt())
			}
		}
	}
	if h := last.GetHistogram(); h != nil {
		for _, p := range h.DataPoints {
			if match(p.Attributes) {
				total += float64(p.Count)
			}
		}
	}
	return total
}

func named(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func hasEvent(s *tracepb.Span, name string) bool {
	for _, e := range s.GetEvents() {
		if e.Name == name {
			return true
		}
	}
	return false
}

func attrOf(s *tracepb.Span, k string) string {
	if s == nil {
		return ""
	}
	return attrString(s.Attributes, k)
}

func attr(kvs []*commonpb.KeyValue, k string) string { return attrString(kvs, k) }

// attrString is an attribute's value as text (ints too).
func attrString(kvs []*commonpb.KeyValue, k string) string {
	for _, a := range kvs {
		if a.Key != k {
			continue
		}
		if v, ok := a.Value.Value.(*commonpb.AnyValue_IntValue); ok {
			return itoa(v.IntValue)
		}
		return a.Value.GetStringValue()
	}
	return ""
}

func intAttr(kvs []*commonpb.KeyValue, k string) int64 {
	for _, a := range kvs {
		if a.Key == k {
			return a.Value.GetIntValue()
		}
	}
	return 0
}

func intOf(s *tracepb.Span, k string) int64 { return intAttr(s.Attributes, k) }

func floatOf(s *tracepb.Span, k string) float64 {
	for _, a := range s.Attributes {
		if a.Key == k {
			return a.Value.GetDoubleValue()
		}
	}
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func getter(env []string) func(string) string {
	return func(k string) string {
		for _, kv := range env {
			if key, v, ok := strings.Cut(kv, "="); ok && key == k {
				return v
			}
		}
		return ""
	}
}
