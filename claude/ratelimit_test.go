package claude

import (
	"reflect"
	"testing"
)

func f64(v float64) *float64 { return &v }

// The lines below were printed by the real CLI 2.1.197 against the fake API
// sending the unified rate-limit headers (subscription auth).
func TestDecodeRateLimitAndInitExtras(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Event
	}{
		{"warning",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1795469828,"rateLimitType":"five_hour","utilization":0.95,"isUsingOverage":false,"surpassedThreshold":0.9},"uuid":"b0c78fb0","session_id":"s1"}`,
			Event{Type: TypeRateLimit, SessionID: "s1", RateLimit: &RateLimitInfo{Status: RateLimitWarning, ResetsAt: 1795469828,
				Type: "five_hour", Utilization: f64(0.95), SurpassedThreshold: f64(0.9)}}},
		{"rejected, no utilization",
			`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795469828,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"8175","session_id":"s2"}`,
			Event{Type: TypeRateLimit, SessionID: "s2", RateLimit: &RateLimitInfo{Status: RateLimitRejected, ResetsAt: 1795469828, Type: "five_hour"}}},
		{"no info", `{"type":"rate_limit_event"}`, Event{Type: TypeRateLimit}},
		{"init with mcp servers",
			`{"type":"system","subtype":"init","session_id":"s3","mcp_servers":[{"name":"gh","status":"failed"},{"name":"db","status":"needs-auth"}]}`,
			Event{Type: TypeSystem, Subtype: SubtypeInit, SessionID: "s3", Init: &Init{SessionID: "s3",
				MCPServers: []MCPServer{{Name: "gh", Status: "failed"}, {Name: "db", Status: "needs-auth"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decode([]byte(tt.line))
			tt.want.Size = len(tt.line)
			if got.Err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode() = %+v (rate limit %+v, init %+v), want %+v", got, got.RateLimit, got.Init, tt.want)
			}
		})
	}
}

func TestDecodeStructuredOutput(t *testing.T) {
	ev := Decode([]byte(`{"type":"result","subtype":"success","is_error":false,"result":"","structured_output":{"a":1}}`))
	if ev.Result == nil || string(ev.Result.StructuredOutput) != `{"a":1}` {
		t.Errorf("structured_output = %+v", ev.Result)
	}
}
