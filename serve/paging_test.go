package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bigLog makes a session whose log holds turns of about 1.6 MB each (an
// 800 KB message and its echo): n turns, about 1.6n MB.
func bigLog(b *bed, n int) (id string, last int64) {
	b.t.Helper()
	id = b.createSession()
	for i := range n {
		msg := fmt.Sprintf(`{"content":"%d %s","wait":true}`, i, strings.Repeat("x", 800<<10))
		if resp := b.do("POST", "/api/sessions/"+id+"/messages", msg, nil); resp.StatusCode != 200 {
			b.t.Fatalf("message %d: %d", i, resp.StatusCode)
		}
	}
	var o sessionObject
	b.do("GET", "/api/sessions/"+id, "", &o)
	return id, o.LastSeq
}

// heapPeak samples the heap until stop is called and returns the highest
// HeapInuse seen.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// pollAll pages through a session's events by long poll, keeping only
// their seqs; it fails unless they are 1..last with every page within the
// bound (or a single event).
func pollAll(b *bed, id string, last int64) error {
	var seqs int64
	for after := int64(0); after < last; {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/sessions/%s/events?after=%d", b.ts.URL, id, after), nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := b.ts.Client().Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return err
		}
		var p struct {
			Events    []json.RawMessage `json:"events"`
			NextAfter int64             `json:"next_after"`
			LastSeq   int64             `json:"last_seq"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return fmt.Errorf("page after %d: %v", after, err)
		}
		if len(p.Events) == 0 || len(p.Events) > 1 && len(body) > pageBytes+1024 {
			return fmt.Errorf("page after %d: %d events in %d bytes", after, len(p.Events), len(body))
		}
		for _, ev := range p.Events {
			var h struct{ Seq int64 }
			json.Unmarshal(ev, &h)
			if seqs++; h.Seq != seqs {
				return fmt.Errorf("event %d has seq %d", seqs, h.Seq)
			}
		}
		if p.NextAfter != seqs || p.LastSeq != last {
			return fmt.Errorf("page after %d: next_after %d last_seq %d, want %d %d", after, p.NextAfter, p.LastSeq, seqs, last)
		}
		after = p.NextAfter
	}
	return nil
}

// TestLongPollPagesBoundMemory is finding 7 of issue 26: 20 parallel long
// polls and 4 WebSocket replays of a 20 MB log, after a restart (finding
// 1: the log's 800 KB lines read back), keep the server's heap bounded:
// every answer is a page of at most pageBytes (or one larger event), and
// a replay holds one page at a time.
func TestLongPollPagesBoundMemory(t *testing.T) {
	b := newBed(t, nil)
	id, last := bigLog(b, 12)
	b.stop()
	b = startBed(t, b.cfg)

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := heapPeak()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- pollAll(b, id, last) }()
	}
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- wsReplay(ctx, b, id, last) }()
	}
	wg.Wait()
	peak := stop()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("log of %d events; heap in use %d MiB before, peak %d MiB during 20 long polls and 4 WebSocket replays (+%d MiB)",
		last, base.HeapInuse>>20, peak>>20, grew>>20)
	if grew > 160<<20 {
		t.Fatalf("the heap grew by %d MiB under 24 readers of a 20 MB log", grew>>20)
	}
}

// wsReplay subscribes from 0 and reads every event, keeping only seqs.
func wsReplay(ctx context.Context, b *bed, id string, last int64) error {
	c, _, err := b.dial(ctx, "/api/sessions/"+id+"/ws", testToken, nil)
	if err != nil {
		return err
	}
	defer c.CloseNow()
	c.SetReadLimit(2 << 20)
	if err := c.Write(ctx, 1, []byte(`{"type":"subscribe","last_seq":0}`)); err != nil {
		return err
	}
	for seq := int64(1); seq <= last; seq++ {
		_, data, err := c.Read(ctx)
		if err != nil {
			return fmt.Errorf("websocket replay at %d: %w", seq, err)
		}
		if bytes.HasPrefix(data, []byte(`{"last_seq"`)) {
			seq-- // a snapshot: the subscribe came after the grace time of a loaded machine
			continue
		}
		if want := fmt.Sprintf(`{"seq":%d,`, seq); !bytes.HasPrefix(data, []byte(want)) {
			return fmt.Errorf("websocket replay: %.40s, want seq %d", data, seq)
		}
	}
	return nil
}

// An event larger than a page is a page of its own, and the pages around
// it stay within the bound.
func TestLongPollBigEventAlone(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	for _, n := range []int{100, 100, 700 << 10, 100} {
		msg := fmt.Sprintf(`{"content":"twice:%s","wait":true}`, strings.Repeat("y", n))
		b.do("POST", "/api/sessions/"+id+"/messages", msg, nil)
	}
	var pages []string
	for after := int64(0); ; {
		var p pollPage
		b.do("GET", fmt.Sprintf("/api/sessions/%s/events?after=%d", id, after), "", &p)
		var types []string
		for _, ev := range p.Events {
			types = append(types, ev["type"].(string))
		}
		pages = append(pages, strings.Join(types, ","))
		if after = p.NextAfter; after >= p.LastSeq {
			break
		}
	}
	// Each turn: user_message, status_change, assistant, result,
	// turn_end, status_change. The third turn's message is 700 KB and its answer
	// 1.4 MB.
	got := strings.Join(pages, " | ")
	want := "user_message,status_change,assistant,result,turn_end,status_change,user_message,status_change,assistant,result,turn_end,status_change,user_message,status_change | " +
		"assistant | result,turn_end,status_change,user_message,status_change,assistant,result,turn_end,status_change"
	if got != want {
		t.Fatalf("pages:\n%s\nwant\n%s", got, want)
	}
}

// A message sent with wait answers at most a page of its turn's events,
// always with the result, and next_after to go on with the long poll.
func TestMessageWaitBounded(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	var out struct {
		Seq       int64             `json:"seq"`
		Events    []json.RawMessage `json:"events"`
		Result    map[string]any    `json:"result"`
		NextAfter int64             `json:"next_after"`
	}
	msg := fmt.Sprintf(`{"content":"twice:%s","wait":true}`, strings.Repeat("w", 700<<10))
	if resp := b.do("POST", "/api/sessions/"+id+"/messages", msg, &out); resp.StatusCode != 200 {
		t.Fatalf("wait: %d", resp.StatusCode)
	}
	// user_message (700 KB), status_change | assistant (1.4 MB), result
	if len(out.Events) != 2 || out.NextAfter != 2 || out.Result["type"] != "result" || out.Result["seq"].(float64) != 4 {
		t.Fatalf("a turn over a page: %d events, next_after %d, result %v", len(out.Events), out.NextAfter, out.Result["seq"])
	}
	out.Events, out.NextAfter = nil, 0
	b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"small","wait":true}`, &out)
	if len(out.Events) != 4 || out.NextAfter != 0 || out.Result["seq"].(float64) != 10 {
		t.Fatalf("a small turn: %d events, next_after %d, result %v", len(out.Events), out.NextAfter, out.Result["seq"])
	}
}
