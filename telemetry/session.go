package telemetry

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// SpanSession is the span of a server session, from its first event to
// its close; its turns are pneuma.turn spans under it.
const SpanSession = "pneuma.session"

// sessions are the open spans of a server's sessions.
type sessions struct {
	mu   sync.Mutex
	open map[string]*sessionSpans
}

type sessionSpans struct {
	ctx     context.Context
	span    trace.Span
	turn    trace.Span
	turns   int
	running bool
	model   string
	cost    float64 // the session's cost at its latest result
}

// sessionResult is the part of a session's result event telemetry reads.
type sessionResult struct {
	IsError      bool         `json:"is_error"`
	TotalCostUSD float64      `json:"total_cost_usd"`
	DurationMS   int64        `json:"duration_ms"`
	Usage        report.Usage `json:"usage"`
	Errors       []string     `json:"errors"`
}

// SessionEvent turns a server session's events into a span per session
// and per turn (from the status turning running to the result), and the
// turn and cost metrics. It is safe for concurrent use; off, it does nothing.
func (t *Telemetry) SessionEvent(id string, ev runner.SessionEvent) {
	if t == nil || t.inst == nil {
		return
	}
	status := ""
	if ev.Type == "status_change" {
		var st struct {
			Status string `json:"status"`
		}
		_ = json.Unmarshal(ev.Data, &st)
		status = st.Status
	}
	t.sessions.mu.Lock()
	defer t.sessions.mu.Unlock()
	s := t.sessions.open[id]
	if s == nil {
		if !opensSession(ev.Type, status) {
			return // what a closed session still says (cli_exited) opens no span
		}
		s = t.sessions.start(t, id)
	}
	now := time.Now()
	switch ev.Type {
	case "session_init":
		var init struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(ev.Data, &init)
		s.model = firstNonEmpty(init.Model, s.model)
		s.span.SetAttributes(attribute.String("gen_ai.request.model", s.model))
	case "status_change":
		s.running = status == runner.SessionRunning
		if s.running && s.turn == nil {
			t.startSessionTurn(s, now)
		}
		if ended(status) {
			t.endSession(id, s, status, now)
		}
	case "result":
		t.sessionResult(s, ev.Data, now)
	case "assistant":
		if s.running && s.turn == nil { // the next queued message's turn
			t.startSessionTurn(s, now)
		}
	}
}

// opensSession says whether an event of a session without a span begins
// one: anything but the events that follow its end.
func opensSession(typ, status string) bool {
	switch typ {
	case "session_init", "result", "assistant":
		return true
	case "status_change":
		return !ended(status)
	}
	return false
}

func ended(status string) bool {
	return status == runner.SessionClosed || status == runner.SessionFailed
}

// start opens a session's span.
func (ss *sessions) start(t *Telemetry, id string) *sessionSpans {
	if ss.open == nil {
		ss.open = map[string]*sessionSpans{}
	}
	s := &sessionSpans{}
	s.ctx, s.span = t.tracerOrNoop().Start(t.parent, SpanSession, trace.WithAttributes(
		attribute.String("pneuma.session_id", id), attribute.String("gen_ai.system", "anthropic"),
		attribute.String("gen_ai.operation.name", "invoke_agent")))
	ss.open[id] = s
	return s
}

func (t *Telemetry) startSessionTurn(s *sessionSpans, now time.Time) {
	s.turns++
	_, s.turn = t.tracerOrNoop().Start(s.ctx, SpanTurn, trace.WithTimestamp(now), trace.WithAttributes(
		attribute.Int("pneuma.turn", s.turns), attribute.String("gen_ai.system", "anthropic"), attribute.String("gen_ai.operation.name", "invoke_agent")))
}

func (t *Telemetry) sessionResult(s *sessionSpans, data json.RawMessage, now time.Time) {
	var res sessionResult
	_ = json.Unmarshal(data, &res)
	ctx := context.Background()
	model := modelOr(s.model)
	t.inst.turnDuration.Record(ctx, float64(res.DurationMS)/1000, metric.WithAttributes(attribute.String("model", model)))
	if spent := res.TotalCostUSD - s.cost; spent > 0 {
		t.inst.cost.Add(ctx, spent, metric.WithAttributes(attribute.String("model", model)))
		s.cost = res.TotalCostUSD
	}
	recordTokens(t.inst, model, res.Usage)
	if s.turn == nil {
		return
	}
	s.turn.SetAttributes(append(usageAttrs(res.Usage), attribute.Float64("pneuma.cost_usd", res.TotalCostUSD),
		attribute.Int64("pneuma.duration_ms", res.DurationMS))...)
	if res.IsError {
		s.turn.SetStatus(codes.Error, safe(joinStrings(res.Errors)))
	}
	s.turn.End(trace.WithTimestamp(now))
	s.turn = nil
}

func (t *Telemetry) endSession(id string, s *sessionSpans, status string, now time.Time) {
	if s.turn != nil {
		s.turn.End(trace.WithTimestamp(now))
	}
	s.span.SetAttributes(attribute.String("pneuma.status", status), attribute.Float64("pneuma.cost_usd", s.cost), attribute.Int("pneuma.turns", s.turns))
	if status == runner.SessionFailed {
		s.span.SetStatus(codes.Error, "session failed")
	}
	s.span.End(trace.WithTimestamp(now))
	delete(t.sessions.open, id)
}

func (t *Telemetry) tracerOrNoop() trace.Tracer {
	if t.tracer != nil {
		return t.tracer
	}
	return noopTracer
}

func joinStrings(ss []string) string {
	out := ""
	for _, s := range ss {
		if out != "" {
			out += "; "
		}
		out += s
	}
	return out
}
