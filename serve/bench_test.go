package serve

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestBenchFanOut (PNEUMA_BENCH=1): 10,000 events to 100 WebSocket clients
// on loopback, appended at 2,000 events/s; latency from append to each
// client's receipt, and CPU per event (server and clients: one process).
func TestBenchFanOut(t *testing.T) {
	if os.Getenv("PNEUMA_BENCH") == "" {
		t.Skip("set PNEUMA_BENCH=1")
	}
	const clients, events = 100, 10000
	b := newBed(t, nil)
	id := b.createSession()
	sess := b.engine.last()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c, _, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		send(t, ctx, c, `{"type":"subscribe","last_seq":0}`)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < events; n++ {
				_, data, err := c.Read(ctx)
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				var m struct {
					T int64 `json:"t"`
				}
				json.Unmarshal(data, &m)
				lat[i] = append(lat[i], time.Since(time.Unix(0, m.T)))
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	cpu0 := cpuTime()
	tick := time.NewTicker(500 * time.Microsecond)
	for range events {
		<-tick.C
		sess.emit("stream_event", map[string]any{"t": time.Now().UnixNano(), "event": map[string]string{"type": "content_block_delta", "text": "hello world"}})
	}
	tick.Stop()
	wg.Wait()
	cpu := cpuTime() - cpu0
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	p := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	t.Logf("fan-out %d events x %d clients: p50 %v p99 %v max %v; CPU %v/event (server+clients)", events, clients, p(0.5), p(0.99), all[len(all)-1], cpu/events)
	if p(0.99) > 10*time.Millisecond {
		t.Errorf("p99 %v > 10ms", p(0.99))
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestBenchIdleRSS (PNEUMA_BENCH=1): the process's RSS with 8 idle sessions
// of 1,000 events each (the test binary included).
func TestBenchIdleRSS(t *testing.T) {
	if os.Getenv("PNEUMA_BENCH") == "" {
		t.Skip("set PNEUMA_BENCH=1")
	}
	b := newBed(t, func(c *Config) { c.MaxSessions = 8 })
	for range 8 {
		b.createSession()
		sess := b.engine.last()
		for i := range 1000 {
			sess.emit("assistant", map[string]any{"i": i, "text": strings.Repeat("x", 500)})
		}
	}
	time.Sleep(200 * time.Millisecond)
	rss := vmRSS()
	t.Logf("RSS with 8 idle sessions (8,000 events): %d MiB", rss>>20)
	if rss > 64<<20 {
		t.Errorf("RSS %d MiB > 64 MiB", rss>>20)
	}
}

func vmRSS() int64 {
	data, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
