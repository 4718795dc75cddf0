package serve

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the GC percent without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestPlanningGCNests: runs planned at once keep the planning GC percent
// until the last is planned, which puts back the server's.
func TestPlanningGCNests(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	first := planningGC()
	second := planningGC()
	if got := gcPercent(); got != planGCPercent {
		t.Fatalf("while planning: GC percent %d, want %d", got, planGCPercent)
	}
	first()
	if got := gcPercent(); got != planGCPercent {
		t.Errorf("one run still planning: GC percent %d, want %d", got, planGCPercent)
	}
	second()
	if got := gcPercent(); got != 50 {
		t.Errorf("after planning: GC percent %d, want the server's 50", got)
	}
}
