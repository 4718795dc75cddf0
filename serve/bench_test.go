package serve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// TestBenchFanOut (PNEUMA_BENCH=1): 10,000 events to 100 WebSocket clients
// on loopback, appended at PNEUMA_BENCH_RATE events/s (default 2,000; a
// model streaming text makes tens to a few hundred a second). The clients run in another
// process (TestBenchClients) so that the CPU measured here is the server's:
// the append of each event (as a session's reader does it) and its fan-out.
// Latency runs from the append to each client's receipt of the whole
// message, read by the WebSocket library. It prints the server's CPU and
// write system calls per event and the client process's CPU per event
// (the two processes share the machine). PNEUMA_BENCH_FLUSH sets the
// pacing of writes (flushEvery) for a run.
func TestBenchFanOut(t *testing.T) {
	if os.Getenv("PNEUMA_BENCH") == "" {
		t.Skip("set PNEUMA_BENCH=1")
	}
	const clients, events = 100, 10000
	if d, err := time.ParseDuration(os.Getenv("PNEUMA_BENCH_FLUSH")); err == nil && d > 0 {
		defer func(d time.Duration) { flushEvery = d }(flushEvery)
		flushEvery = d // before the server starts: no pump reads it yet
	}
	b := newBed(t, nil)
	id := b.createSession()
	sess := b.engine.last()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBenchClients$", "-test.v")
	if p := os.Getenv("PNEUMA_BENCH_CLIENT_PROFILE"); p != "" {
		cmd.Args = append(cmd.Args, "-test.cpuprofile="+p) // the clients' own CPU profile
	}
	cmd.Env = append(os.Environ(), fmt.Sprintf("PNEUMA_BENCH_CLIENTS=%s %s %d %d",
		"ws"+strings.TrimPrefix(b.ts.URL, "http")+"/api/sessions/"+id+"/ws", testToken, clients, events))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(out)
	var result string
	for lines.Scan() {
		if lines.Text() == "clients ready" {
			break
		}
	}
	log := b.s.sessions.get(id).log
	poll.Eventually(t, time.Minute, func() bool { return log.Followers() == clients }, "%d clients follow the log", clients)
	cpu0, writes0 := cpuTime(), writeCalls()
	rate := 2000
	if r, err := strconv.Atoi(os.Getenv("PNEUMA_BENCH_RATE")); err == nil && r > 0 {
		rate = r
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for range events {
		<-tick.C
		sess.emit("stream_event", map[string]any{"t": time.Now().UnixNano(), "event": map[string]string{"type": "content_block_delta", "text": "hello world"}})
	}
	tick.Stop()
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), "latency ") {
			result = lines.Text()
		}
	}
	cpu, writes := cpuTime()-cpu0, writeCalls()-writes0
	if err := cmd.Wait(); err != nil || result == "" {
		t.Fatalf("clients: %v (no result)", err)
	}
	var p50, p99, worst, clientCPU time.Duration
	fmt.Sscanf(result, "latency %d %d %d %d", &p50, &p99, &worst, &clientCPU)
	t.Logf("fan-out %d events x %d clients at %d events/s (writes paced %v): p50 %v p99 %v max %v; server CPU %v/event, clients' CPU %v/event, %.1f writes/event", events, clients, rate, flushEvery, p50, p99, worst, cpu/events, clientCPU/events, float64(writes)/events)
	if p99 > 10*time.Millisecond {
		t.Errorf("p99 %v > 10ms", p99)
	}
}

// TestBenchClients is the client side of TestBenchFanOut, run in its own
// process: it subscribes its clients, says "clients ready", reads every
// event (decoding only the append time) and prints "latency p50 p99 max
// cpu" in nanoseconds, cpu being the process's CPU time from "clients
// ready" to the last event.
func TestBenchClients(t *testing.T) {
	spec := os.Getenv("PNEUMA_BENCH_CLIENTS")
	if spec == "" {
		t.Skip("run by TestBenchFanOut")
	}
	var url, token string
	var clients, events int
	fmt.Sscanf(spec, "%s %s %d %d", &url, &token, &clients, &events)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conns := make([]*websocket.Conn, 0, clients)
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		conns = append(conns, c)
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","last_seq":0}`)); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Reads get a context without a deadline or a cancel: for any
			// other the WebSocket library arms a timer and watches the
			// context at every frame, which costs this process more than
			// the reading itself. The clients stay the library's, each
			// frame read and decoded by it; a watchdog closes them if the
			// server stops sending.
			lat[i] = readLatencies(context.Background(), c, events, make([]time.Duration, 0, events))
		}()
	}
	stuck := time.AfterFunc(2*time.Minute, func() {
		for _, c := range conns {
			c.CloseNow()
		}
	})
	defer stuck.Stop()
	fmt.Println("clients ready")
	cpu0 := cpuTime()
	wg.Wait()
	cpu := cpuTime() - cpu0
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) < clients*events {
		t.Fatalf("%d receipts of %d", len(all), clients*events)
	}
	slices.Sort(all)
	p := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	fmt.Printf("latency %d %d %d %d\n", p(0.5), p(0.99), all[len(all)-1], cpu)
}

// readLatencies reads n events, each the receipt time less its "t".
func readLatencies(ctx context.Context, c *websocket.Conn, n int, lat []time.Duration) []time.Duration {
	buf := make([]byte, 0, 1024)
	for len(lat) < n {
		_, r, err := c.Reader(ctx)
		if err != nil {
			return lat
		}
		buf = buf[:0]
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			m, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if err != nil {
				break
			}
		}
		now := time.Now()
		if i := bytes.Index(buf, []byte(`"t":`)); i >= 0 {
			v, _ := strconv.ParseInt(string(bytes.TrimRight(buf[i+4:], "}")), 10, 64)
			lat = append(lat, now.Sub(time.Unix(0, v)))
		}
	}
	return lat
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// writeCalls is how many write system calls the process made (syscw).
func writeCalls() int64 {
	data, _ := os.ReadFile("/proc/self/io")
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
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
	rss := vmRSS() // every append has returned: nothing more is coming
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
