package telemetry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/telemetry"
)

func sessionEvent(typ string, data any) runner.SessionEvent {
	b, _ := json.Marshal(data)
	return runner.SessionEvent{Type: typ, Data: b}
}

// TestSessionSpans: a session is a span with a turn per message; its cost
// counts once per dollar; what it says after its close opens no span.
func TestSessionSpans(t *testing.T) {
	rc, url := httpReceiver(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{Prometheus: true, Getenv: getter([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + url})})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []runner.SessionEvent{
		sessionEvent("status_change", map[string]string{"status": "idle"}),
		sessionEvent("status_change", map[string]string{"status": "running"}),
		sessionEvent("session_init", map[string]string{"model": "claude-opus-4-8"}),
		sessionEvent("result", map[string]any{"total_cost_usd": 0.25, "duration_ms": 1500, "usage": map[string]int{"input_tokens": 10, "output_tokens": 2}}),
		sessionEvent("assistant", map[string]any{}), // a queued message's turn
		sessionEvent("result", map[string]any{"total_cost_usd": 0.75, "duration_ms": 500, "is_error": true, "errors": []string{"boom"}}),
		sessionEvent("status_change", map[string]string{"status": "idle"}),
		sessionEvent("status_change", map[string]string{"status": "closed"}),
		sessionEvent("cli_exited", map[string]int{"exit_code": 0}),
	} {
		tel.SessionEvent("s1", ev)
	}
	fams := scrape(t, tel.MetricsHandler())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, _, _ := rc.snapshot()
	sessions := named(spans, telemetry.SpanSession)
	if len(sessions) != 1 || attrOf(sessions[0], "pneuma.status") != "closed" || attrOf(sessions[0], "pneuma.turns") != "2" {
		t.Fatalf("session spans %v", sessions)
	}
	turns := named(spans, telemetry.SpanTurn)
	for _, turn := range turns {
		if hex.EncodeToString(turn.ParentSpanId) != hex.EncodeToString(sessions[0].SpanId) {
			t.Errorf("turn %s not under the session", attrOf(turn, "pneuma.turn"))
		}
	}
	if len(turns) != 2 || turns[1].Status.GetMessage() != "boom" {
		t.Errorf("turns %v", turns)
	}
	if got := familySum(fams["pneuma_cost_usd_total"]); math.Abs(got-0.75) > 1e-9 {
		t.Errorf("session cost %v, want 0.75", got)
	}
}
