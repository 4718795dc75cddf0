package telemetry_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// receiver is an OTLP receiver: what pneuma exports, decoded with the OTLP
// protobuf types, over HTTP (/v1/traces, /v1/metrics) or gRPC.
type receiver struct {
	coltrace.UnimplementedTraceServiceServer

	mu      sync.Mutex
	spans   []*tracepb.Span
	res     []*commonpb.KeyValue // the resource attributes of the last batch
	metrics []*metricspb.Metric
	bad     []string
}

func (rc *receiver) addTraces(req *coltrace.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		rc.res = rs.GetResource().GetAttributes()
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
}

func (rc *receiver) addMetrics(req *colmetrics.ExportMetricsServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			rc.metrics = append(rc.metrics, sm.Metrics...)
		}
	}
}

// Export is the gRPC trace service.
func (rc *receiver) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	rc.addTraces(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// metricsService is the gRPC metrics service (its method has the trace
// service's name).
type metricsService struct {
	colmetrics.UnimplementedMetricsServiceServer
	rc *receiver
}

func (m metricsService) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	m.rc.addMetrics(req)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil || r.Header.Get("Content-Type") != "application/x-protobuf" {
		rc.mu.Lock()
		rc.bad = append(rc.bad, r.URL.Path+" "+r.Header.Get("Content-Type"))
		rc.mu.Unlock()
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/v1/traces":
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.addTraces(&req)
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	case "/v1/metrics":
		var req colmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.addMetrics(&req)
		out, _ := proto.Marshal(&colmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

// httpReceiver starts an OTLP/HTTP receiver on loopback; its URL is the
// OTEL_EXPORTER_OTLP_ENDPOINT.
func httpReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

// grpcReceiver starts an OTLP/gRPC receiver on loopback.
func grpcReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(gs, rc)
	colmetrics.RegisterMetricsServiceServer(gs, metricsService{rc: rc})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return rc, "http://" + ln.Addr().String()
}

func (rc *receiver) snapshot() ([]*tracepb.Span, []*metricspb.Metric, []*commonpb.KeyValue) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...), append([]*metricspb.Metric(nil), rc.metrics...), rc.res
}
