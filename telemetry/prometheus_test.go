package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/telemetry"
)

// promTelemetry is telemetry with only the Prometheus registry (serve).
func promTelemetry(t *testing.T) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Getenv: getter(nil), Prometheus: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// exercise records a value in every instrument: a run with jobs, a tool
// call, a retry, a hold, a concurrency change and HTTP traffic.
func exercise(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	obs := tel.Observer()
	feedJobs(obs, 3)
	now := time.Now()
	status, ok := 529, true
	resume := now.Add(time.Hour)
	for _, e := range []runner.Event{
		{Type: runner.EventJobStarted, Job: "held"},
		{Type: runner.EventAttemptStarted, Job: "held", WaitMS: 1500},
		{Type: runner.EventTurnStarted, Job: "held", Turn: 1},
		{Type: runner.EventAPIRetry, Job: "held", Attempt: 1, ErrorStatus: &status},
		{Type: runner.EventToolCall, Job: "held", Tool: &runner.ToolCall{Name: "Bash", Decision: "deny", Via: "hook", OK: &ok, Started: now}},
		{Type: runner.EventUsageLimitWait, Job: "held", ResumeAt: &resume},
		{Type: runner.EventConcurrency, Concurrency: 2, Reason: "429/529 storm"},
		{Type: runner.EventJobFinished, Job: "held", Result: &report.Job{Name: "held", Status: report.StatusFailed, Reason: report.ReasonUsageLimit, CostUSD: 0.5, Model: "claude-sonnet-4-6",
			Sandbox: &report.Sandbox{RefusedCount: 3, DeniedReads: 2, DeniedWrites: 1}}},
	} {
		e.Time, e.RunID = now, "r"
		obs.Event(e)
	}
	h := tel.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tel.ConnState(nil, http.StateNew)
	tel.EventsSent(3)
	tel.ClientDropped()
}

// scrape GETs the metrics handler and parses the Prometheus text format.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q", ct)
	}
	return parseText(t, resp.Body)
}

func parseText(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return fams
}

func TestPrometheusScrape(t *testing.T) {
	tel := promTelemetry(t)
	exercise(t, tel)
	fams := scrape(t, tel.MetricsHandler())
	want := map[string]float64{
		"pneuma_jobs_finished_total": 4, "pneuma_cost_usd_total": 0.53, "pneuma_usage_limit_holds_total": 1,
		"pneuma_api_errors_total": 1, "pneuma_tool_calls_total": 1, "pneuma_http_requests_total": 1,
		"pneuma_jobs_running": 0, "pneuma_concurrency": 2, "pneuma_http_connections": 1,
		"pneuma_ws_events_sent_total": 3, "pneuma_ws_clients_dropped_total": 1,
		"pneuma_sandbox_refused_total": 3, "pneuma_sandbox_denied_total": 3,
	}
	for name, v := range want {
		f := fams[name]
		if f == nil {
			t.Errorf("no %s in the scrape (have %v)", name, famNames(fams))
			continue
		}
		if got := familySum(f); math.Abs(got-v) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	for _, name := range []string{"pneuma_job_duration_seconds", "pneuma_turn_duration_seconds", "pneuma_queue_wait_seconds", "pneuma_usage_limit_wait_seconds"} {
		if f := fams[name]; f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("no histogram %s (have %v)", name, famNames(fams))
		}
	}
	if l := labels(fams["pneuma_tool_calls_total"]); l["tool"] != "Bash" || l["decision"] != "deny" {
		t.Errorf("tool call labels %v", l)
	}
	if l := labels(fams["pneuma_http_requests_total"]); l["code"] != "418" || l["route"] != "unmatched" {
		t.Errorf("http labels %v", l)
	}
}

// TestDashboardQueriesExportedMetrics: every metric the Grafana dashboard
// queries is one pneuma exports (as scraped), and the dashboard covers
// jobs by status, spend, tokens by model, p95 job duration and holds.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	data, err := os.ReadFile("../examples/grafana/dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	tel := promTelemetry(t)
	exercise(t, tel)
	fams := scrape(t, tel.MetricsHandler())
	exported := map[string]bool{}
	for name, f := range fams {
		exported[name] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[name+s] = true
			}
		}
	}
	metricName := regexp.MustCompile(`\bpneuma_[a-z0-9_]+`)
	var all []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q queries no pneuma metric: %s", p.Title, tg.Expr)
			}
			for _, n := range names {
				all = append(all, n)
				if !exported[n] {
					t.Errorf("panel %q queries %s, which pneuma does not export", p.Title, n)
				}
			}
		}
	}
	joined := strings.Join(all, " ")
	for _, m := range []string{"pneuma_jobs_finished_total", "pneuma_cost_usd_total", "pneuma_tokens_total", "pneuma_job_duration_seconds_bucket", "pneuma_usage_limit_holds_total"} {
		if !strings.Contains(joined, m) {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

func familySum(f *dto.MetricFamily) float64 {
	total := 0.0
	for _, m := range f.Metric {
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func labels(f *dto.MetricFamily) map[string]string {
	out := map[string]string{}
	if f == nil || len(f.Metric) == 0 {
		return out
	}
	for _, l := range f.Metric[0].Label {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func famNames(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for n := range fams {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
