package cmd

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// startServe runs `pneuma serve` until the test ends and returns its base
// URL, its token and its stderr.
func startServe(t *testing.T, args ...string) (base, token string, errOut *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	io := &IO{Out: out, ErrOut: errOut, Getenv: func(string) string { return "" }}
	c := NewCmdServe(io, nil)
	c.SetArgs(append([]string{"--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--claude", "/nonexistent/claude"}, args...))
	c.SetOut(out)
	c.SetErr(errOut)
	go func() { done <- c.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	if !poll.Until(10*time.Second, func() bool { return strings.Contains(out.String(), "#token=") && strings.HasSuffix(out.String(), "\n") }) {
		t.Fatalf("no URL in %q", out.String())
	}
	url := strings.Fields(out.String()[strings.Index(out.String(), "http://"):])[0]
	base, token, _ = strings.Cut(url, "#token=")
	return base, token, errOut
}

func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func parseMetrics(t *testing.T, resp *http.Response) map[string]*dto.MetricFamily {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// requests is the count of pneuma_http_requests_total for route and code.
func requests(fams map[string]*dto.MetricFamily, route, code string) float64 {
	for _, m := range fams["pneuma_http_requests_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		if l["route"] == route && l["code"] == code {
			return m.Counter.GetValue()
		}
	}
	return 0
}

// TestServeMetricsBehindToken: /metrics is the Prometheus text format,
// needs the token, and counts requests by route and code.
func TestServeMetricsBehindToken(t *testing.T) {
	base, token, _ := startServe(t)
	if resp := get(t, base+"metrics", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %d", resp.StatusCode)
	}
	get(t, base+"api/health", token)
	fams := parseMetrics(t, get(t, base+"metrics", token))
	if n := requests(fams, "GET /api/health", "200"); n != 1 {
		t.Errorf("GET /api/health 200 counted %v times", n)
	}
	if n := requests(fams, "GET /metrics", "401"); n != 1 {
		t.Errorf("GET /metrics 401 counted %v times", n)
	}
	if f := fams["pneuma_http_connections"]; f == nil || f.Metric[0].Gauge.GetValue() < 1 {
		t.Errorf("open connections %v", f)
	}
}

// TestServeMetricsAddr: --metrics-addr serves /metrics on a listener of
// its own without a token; the API's /metrics then has none.
func TestServeMetricsAddr(t *testing.T) {
	base, token, errOut := startServe(t, "--metrics-addr", "127.0.0.1:0")
	i := strings.Index(errOut.String(), "metrics at http://")
	if i < 0 {
		t.Fatalf("no metrics URL in %q", errOut.String())
	}
	murl := strings.Fields(errOut.String()[i+len("metrics at "):])[0]
	get(t, base+"api/health", token)
	fams := parseMetrics(t, get(t, murl, ""))
	if n := requests(fams, "GET /api/health", "200"); n != 1 {
		t.Errorf("GET /api/health 200 counted %v times", n)
	}
	if resp := get(t, base+"metrics", token); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the API's /metrics with --metrics-addr: %d", resp.StatusCode)
	}
}
