package runner

import (
	"testing"
	"time"
)

func TestSpaceStart(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	tests := []struct {
		name     string
		now      time.Time
		next     time.Time
		waveLeft int
		stagger  time.Duration
		wait     time.Duration
		newNext  time.Time
		newLeft  int
	}{
		{"first start of the run goes at once", t0, time.Time{}, 3, 100 * ms, 0, t0.Add(100 * ms), 2},
		{"second start of the wave waits its turn", t0.Add(10 * ms), t0.Add(100 * ms), 2, 100 * ms, 90 * ms, t0.Add(200 * ms), 1},
		{"a late start of the wave goes at once", t0.Add(time.Second), t0.Add(200 * ms), 1, 100 * ms, 0, t0.Add(1100 * ms), 0},
		{"after the wave: at once", t0.Add(10 * ms), t0.Add(300 * ms), 0, 100 * ms, 0, t0.Add(300 * ms), 0},
		{"no stagger", t0, t0.Add(time.Second), 5, 0, 0, t0.Add(time.Second), 5},
	}
	for _, tt := range tests {
		wait, next, left := spaceStart(tt.now, tt.next, tt.waveLeft, tt.stagger)
		if wait != tt.wait || !next.Equal(tt.newNext) || left != tt.newLeft {
			t.Errorf("%s: spaceStart = %v, %v, %d; want %v, %v, %d", tt.name, wait, next, left, tt.wait, tt.newNext, tt.newLeft)
		}
	}
}

// TestSpaceStartWave runs a wave of four then four more starts at the same
// instant: the wave is spread over three staggers, the rest go at once.
func TestSpaceStartWave(t *testing.T) {
	now, next, left := time.Now(), time.Time{}, 4
	var waits []time.Duration
	for range 8 {
		var w time.Duration
		w, next, left = spaceStart(now, next, left, 100*time.Millisecond)
		waits = append(waits, w)
	}
	want := []time.Duration{0, 100, 200, 300, 0, 0, 0, 0}
	for i := range want {
		if waits[i] != want[i]*time.Millisecond {
			t.Fatalf("waits %v, want %v ms", waits, want)
		}
	}
}
