package serve_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestE2ESessionSpans: pneuma serve with OTEL_EXPORTER_OTLP_ENDPOINT
// traces a session as a pneuma.session span with a pneuma.turn per
// message, and /metrics counts the session's cost.
func TestE2ESessionSpans(t *testing.T) {
	var mu sync.Mutex
	var spans []*tracepb.Span
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" {
			var req coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					spans = append(spans, ss.Spans...)
				}
			}
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		return fakeapi.Text("answer").WithUsage(fakeapi.Usage{Input: 1000, Output: 100})
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL, claudetest.WithVar("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)), repo)
	o := s.create(jsonString(map[string]string{"repo": repo, "name": "traced"}))
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"first","wait":true}`, nil)
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"second","wait":true}`, nil)
	code, metrics := s.do("GET", "/metrics", nil)
	if code != 200 || !strings.Contains(string(metrics), "pneuma_cost_usd_total") || !strings.Contains(string(metrics), "pneuma_turn_duration_seconds_count") {
		t.Errorf("/metrics %d:\n%s", code, metrics)
	}
	s.must(200, "DELETE", "/api/sessions/"+o.ID, nil, nil)
	s.stop(syscall.SIGTERM) // flushes the spans
	mu.Lock()
	defer mu.Unlock()
	var session *tracepb.Span
	turns := 0
	for _, sp := range spans {
		if sp.Name == "pneuma.session" {
			session = sp
		}
	}
	if session == nil {
		t.Fatalf("no session span among %d spans", len(spans))
	}
	for _, sp := range spans {
		if sp.Name == "pneuma.turn" && hex.EncodeToString(sp.ParentSpanId) == hex.EncodeToString(session.SpanId) {
			turns++
		}
	}
	if turns != 2 {
		t.Errorf("%d turn spans under the session, want 2", turns)
	}
}
