package cmd_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pneuma-cli/pneuma/cmd"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
)

// TestRunExportsOTLP: `pneuma run` with OTEL_EXPORTER_OTLP_ENDPOINT sends
// the run's spans before it exits, and --json keeps its events (the fine
// events go to telemetry only).
func TestRunExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	names := map[string]int{}
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
					for _, s := range ss.Spans {
						names[s.Name]++
					}
				}
			}
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{})
	path := writeJobs(t, repo, twoJobs)
	r := run(t, "", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL}, "run", "--json", "--claude", cli, path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if names["pneuma.run"] != 1 || names["pneuma.job"] != 2 || names["pneuma.attempt"] != 2 {
		t.Errorf("spans received %v", names)
	}
	for _, fine := range []string{"turn_started", "attempt_started", "tool_call"} {
		if strings.Contains(r.stdout, `"type":"`+fine+`"`) {
			t.Errorf("--json prints %s events", fine)
		}
	}
}

func TestRunRefusesUnknownExporter(t *testing.T) {
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{})
	path := writeJobs(t, repo, twoJobs)
	r := run(t, "", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "run", "--claude", cli, path)
	if r.code != cmd.ExitUsage || !strings.Contains(r.stderr, "OTEL_TRACES_EXPORTER") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
