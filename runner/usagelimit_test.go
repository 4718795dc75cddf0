package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

func TestUsageLimit(t *testing.T) {
	failed := verdict{status: report.StatusFailed, reason: report.ReasonAPIError}
	rejected := &claude.RateLimitInfo{Status: claude.RateLimitRejected, ResetsAt: 1000}
	tests := []struct {
		name   string
		v      verdict
		rl     *claude.RateLimitInfo
		res    *claude.Result
		ok     bool
		resets int64
	}{
		{"rejected 429", failed, rejected, &claude.Result{APIErrorStatus: ip(429)}, true, 1000},
		{"rejected, no result", failed, rejected, nil, true, 1000},
		{"rejected, unknown reset", failed, &claude.RateLimitInfo{Status: claude.RateLimitRejected}, nil, true, 0},
		{"success despite rejected", verdict{status: report.StatusSucceeded}, rejected, nil, false, 0},
		{"warning only", failed, &claude.RateLimitInfo{Status: claude.RateLimitWarning, ResetsAt: 1000}, nil, false, 0},
		{"no rate limit event", failed, nil, &claude.Result{APIErrorStatus: ip(429)}, false, 0},
		{"rejected but a 500", failed, rejected, &claude.Result{APIErrorStatus: ip(500)}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reset, ok := usageLimit(tt.v, tt.rl, tt.res)
			if ok != tt.ok || (tt.resets != 0 && reset.Unix() != tt.resets) || (tt.resets == 0 && !reset.IsZero()) {
				t.Errorf("usageLimit() = %v, %v", reset, ok)
			}
		})
	}
}

func TestHoldFor(t *testing.T) {
	now := time.Unix(10000, 0)
	on := Limits{Wait: true, MaxWait: time.Hour}
	tests := []struct {
		name  string
		l     Limits
		reset time.Time
		want  time.Duration
		ok    bool
	}{
		{"within max_wait", on, now.Add(30 * time.Minute), 30 * time.Minute, true},
		{"exactly max_wait", on, now.Add(time.Hour), time.Hour, true},
		{"beyond max_wait", on, now.Add(61 * time.Minute), 61 * time.Minute, false},
		{"already passed", on, now.Add(-time.Minute), 0, true},
		{"unknown reset", on, time.Time{}, 0, false},
		{"waiting off", Limits{MaxWait: time.Hour}, now.Add(time.Minute), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := holdFor(tt.l, now, tt.reset)
			if d != tt.want || ok != tt.ok {
				t.Errorf("holdFor() = %v, %v; want %v, %v", d, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestPastReserve(t *testing.T) {
	tests := []struct {
		reserve float64
		rl      *claude.RateLimitInfo
		want    bool
	}{
		{0.8, &claude.RateLimitInfo{Utilization: fp(0.85)}, true},
		{0.8, &claude.RateLimitInfo{Utilization: fp(0.8)}, true},
		{0.8, &claude.RateLimitInfo{Utilization: fp(0.5)}, false},
		{0.8, &claude.RateLimitInfo{}, false},
		{0.8, nil, false},
		{0, &claude.RateLimitInfo{Utilization: fp(0.99)}, false},
	}
	for _, tt := range tests {
		if got := pastReserve(Limits{ReserveUtilization: tt.reserve}, tt.rl); got != tt.want {
			t.Errorf("pastReserve(%v, %+v) = %v", tt.reserve, tt.rl, got)
		}
	}
}

func TestConcurrencyStormAndRecovery(t *testing.T) {
	t0 := time.Unix(0, 0)
	c := concurrency{limit: 8, max: 8, changed: t0}
	step := func(at time.Duration) bool {
		var changed bool
		c, changed = c.overloaded(t0.Add(at), 10*time.Second)
		return changed
	}
	if step(1*time.Second) || step(2*time.Second) {
		t.Fatal("two answers made a storm")
	}
	if !step(3*time.Second) || c.limit != 4 {
		t.Fatalf("third answer: limit %d", c.limit)
	}
	// Answers spread wider than the window are no storm.
	if step(20*time.Second) || step(31*time.Second) || step(42*time.Second) {
		t.Errorf("spread answers changed the limit to %d", c.limit)
	}
	if _, changed := c.recovered(t0.Add(50*time.Second), 30*time.Second); changed {
		t.Error("recovered within recoverAfter of the last overload")
	}
	for want := 5; want <= 8; want++ {
		var changed bool
		c, changed = c.recovered(c.nextRecovery(30*time.Second), 30*time.Second)
		if !changed || c.limit != want {
			t.Fatalf("recovery step: limit %d, want %d", c.limit, want)
		}
	}
	if !c.nextRecovery(time.Second).IsZero() {
		t.Error("a full limit still plans a recovery")
	}
	one := concurrency{limit: 1, max: 4}
	for i := range 3 {
		one, _ = one.overloaded(t0.Add(time.Duration(i)*time.Second), time.Minute)
	}
	if one.limit != 1 {
		t.Errorf("limit went below one: %d", one.limit)
	}
}

func TestDecodeLimitsAndNewJobFields(t *testing.T) {
	tests := []struct {
		name, yaml, err string
	}{
		{"ok", "version: 1\nlimits: {wait: false, max_wait: 2h, reserve_utilization: 0.8}\njobs: [{name: a, prompt: p, fallback_model: haiku, expect: {changes: true}, output_schema: {type: object}}]\n", ""},
		{"unknown limits key", "version: 1\nlimits: {max_wiat: 2h}\njobs: [{name: a, prompt: p}]\n", `unknown field "max_wiat"`},
		{"reserve range", "version: 1\nlimits: {reserve_utilization: 80}\njobs: [{name: a, prompt: p}]\n", "between 0 and 1"},
		{"unknown expect key", "version: 1\njobs: [{name: a, prompt: p, expect: {change: true}}]\n", `unknown field "change"`},
		{"schema list", "version: 1\njobs: [{name: a, prompt: p, output_schema: [1]}]\n", "output_schema must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := jobfile.Decode("jobs.yaml", []byte(tt.yaml))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("Decode() error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("Decode() error %v, want %q", err, tt.err)
			case tt.err == "":
				l := limitsOf(f.Limits)
				if l.Wait || l.MaxWait != 2*time.Hour || l.ReserveUtilization != 0.8 || !f.Jobs[0].Expect.Changes ||
					f.Jobs[0].FallbackModel != "haiku" || string(f.Jobs[0].OutputSchema) != `{"type":"object"}` {
					t.Errorf("decoded %+v %+v", l, f.Jobs[0])
				}
			}
		})
	}
	if l := limitsOf(jobfile.Limits{}); !l.Wait || l.MaxWait != DefaultMaxWait {
		t.Errorf("defaults %+v", l)
	}
}

func TestWaitLine(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 48, 0, 0, time.Local)
	got := waitLine(now, now.Add(3*time.Hour+12*time.Minute), 7)
	if got != "usage limit reached; waiting until 14:00 (3h12m) to resume 7 jobs" {
		t.Errorf("waitLine() = %q", got)
	}
}
