package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

func obj(typ string, i int) []byte {
	return []byte(fmt.Sprintf(`{"type":%q,"time":"2026-01-01T00:00:00Z","n":%d}`, typ, i))
}

func open(t *testing.T, path string) *Log {
	t.Helper()
	l, err := Open(path, func(typ string) bool { return typ == "result" })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestAppendReadSeqs(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	for i := 1; i <= 5; i++ {
		seq, err := l.Append("x", obj("x", i))
		if err != nil || seq != int64(i) {
			t.Fatalf("append %d: seq %d, %v", i, seq, err)
		}
	}
	if _, err := l.Append("x", []byte(`[1]`)); err == nil {
		t.Fatal("a non-object was appended")
	}
	evs, err := l.Read(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || evs[0].Seq != 3 || evs[2].Seq != 5 {
		t.Fatalf("read after 2: %+v", evs)
	}
	want := `{"seq":3,"type":"x","time":"2026-01-01T00:00:00Z","n":3}`
	if string(evs[0].Raw) != want || evs[0].Type != "x" {
		t.Fatalf("event 3 = %s (%s), want %s", evs[0].Raw, evs[0].Type, want)
	}
	evs, _ = l.Read(0, 2)
	if len(evs) != 2 || evs[1].Seq != 2 {
		t.Fatalf("read max 2: %+v", evs)
	}
	if evs, _ := l.Read(5, 0); len(evs) != 0 {
		t.Fatalf("read after last: %+v", evs)
	}
	if seq, _ := l.Append("e", []byte(`{}`)); seq != 6 {
		t.Fatal(seq)
	}
	if evs, _ := l.Read(5, 0); string(evs[0].Raw) != `{"seq":6}` {
		t.Fatalf("empty object: %s", evs[0].Raw)
	}
}

func TestReopen(t *testing.T) {
	tests := []struct {
		name    string
		tail    string // written after 3 good events
		wantErr bool
		next    int64
	}{
		{"clean", "", false, 4},
		{"torn last line", `{"seq":4,"type":"x","ti`, false, 4},
		{"torn seq", `{"se`, false, 4},
		{"corrupt complete line", "garbage\n", true, 0},
		{"seq gap", `{"seq":5,"type":"x"}` + "\n", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			l, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 3; i++ {
				if _, err := l.Append("x", obj("x", i)); err != nil {
					t.Fatal(err)
				}
			}
			l.Close()
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(tt.tail)
			f.Close()
			l, err = Open(path, nil)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "events.jsonl:4") {
					l.Close()
					t.Fatalf("err = %v, want one naming line 4", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if l.LastSeq() != 3 {
				t.Fatalf("last seq %d", l.LastSeq())
			}
			seq, err := l.Append("x", obj("x", 4))
			if err != nil || seq != tt.next {
				t.Fatalf("next seq %d, %v", seq, err)
			}
			evs, err := l.Read(0, 0)
			if err != nil || len(evs) != 4 || evs[3].Seq != 4 || !strings.HasSuffix(string(evs[3].Raw), `"n":4}`) {
				t.Fatalf("after reopen: %v %+v", err, evs)
			}
		})
	}
}

// TestFollowNoGapNoDuplicate subscribes at every point while a writer
// appends: each subscription sees exactly after+1..N in order.
func TestFollowNoGapNoDuplicate(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	const n = 2000
	for i := 1; i <= 500; i++ {
		l.Append("x", obj("x", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for k := 0; k < 20; k++ {
		after := int64(k * 25) // up to 475: all before the live appends
		sub := l.Subscribe(after, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer sub.Close()
			want := after + 1
			for want <= n {
				evs, err := sub.Next(ctx)
				if err != nil {
					errs <- fmt.Errorf("after %d: %w at %d", after, err, want)
					return
				}
				for _, ev := range evs {
					if ev.Seq != want {
						errs <- fmt.Errorf("after %d: got seq %d, want %d", after, ev.Seq, want)
						return
					}
					want++
				}
			}
		}()
	}
	for i := 501; i <= n; i++ {
		if _, err := l.Append("x", obj("x", i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSlowFollowerDropped(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	slow := l.Subscribe(0, 4)
	fast := l.Subscribe(0, 100)
	for i := 1; i <= 10; i++ {
		l.Append("x", obj("x", i)) // never blocks on slow
	}
	ctx := context.Background()
	var got []int64
	for {
		evs, err := slow.Next(ctx)
		if err != nil {
			if !errors.Is(err, ErrSlow) {
				t.Fatalf("slow: %v, want ErrSlow", err)
			}
			break
		}
		for _, ev := range evs {
			got = append(got, ev.Seq)
		}
	}
	if len(got) != 4 || got[3] != 4 || slow.Last() != 4 {
		t.Fatalf("slow got %v (last %d), want 1..4", got, slow.Last())
	}
	// It comes back from where it was and misses nothing.
	again := l.Subscribe(slow.Last(), 100)
	evs, err := again.Next(ctx)
	if err != nil || len(evs) != 6 || evs[0].Seq != 5 {
		t.Fatalf("resubscribe: %v %+v", err, evs)
	}
	evs, err = fast.Next(ctx)
	if err != nil || len(evs) != 10 {
		t.Fatalf("fast: %v, %d events", err, len(evs))
	}
	l.Close()
	if _, err := fast.Next(ctx); !errors.Is(err, ErrEnded) {
		t.Fatalf("after close: %v, want ErrEnded", err)
	}
	if _, err := l.Append("x", obj("x", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if evs, err := l.Read(0, 0); err != nil || len(evs) != 10 {
		t.Fatalf("a closed log stays readable: %v, %d", err, len(evs))
	}
}

func TestWait(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	l.Append("x", obj("x", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if evs, err := l.Wait(ctx, 1, 0); err != nil || len(evs) != 0 {
		t.Fatalf("timed-out wait: %v %v", evs, err)
	}
	// The append comes while the Wait is blocked: only its wake-up can
	// end the wait with the event (its timeout ends it with none).
	go func() {
		if poll.Until(5*time.Second, func() bool { return l.Waiting() == 1 }) {
			l.Append("x", obj("x", 2))
		}
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	evs, err := l.Wait(ctx2, 1, 0)
	if err != nil || len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("wait: %v %+v", err, evs)
	}
	if n := l.Waiting(); n != 0 {
		t.Errorf("%d waits still counted after they returned", n)
	}
}

// TestReplay10k is the replay budget: 10,000 events read back in <= 50 ms.
// TestReplay10k: a reconnecting client gets all of a long log. How fast is
// BenchmarkReplay10k's to say (scripts/bench-serve.sh prints it).
func TestReplay10k(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	fill(t, l, 10000)
	if n := replayAll(t, l); n != 10000 {
		t.Fatalf("replayed %d", n)
	}
}

func fill(tb testing.TB, l *Log, n int) {
	pad := strings.Repeat("p", 300)
	for i := 1; i <= n; i++ {
		b := fmt.Appendf(nil, `{"type":"assistant","time":"2026-01-01T00:00:00Z","message":{"text":%q,"i":%d}}`, pad, i)
		if _, err := l.Append("assistant", b); err != nil {
			tb.Fatal(err)
		}
	}
}

func replayAll(tb testing.TB, l *Log) int {
	sub := l.Subscribe(0, 16)
	defer sub.Close()
	n := 0
	ctx := context.Background()
	for sub.Last() < l.LastSeq() {
		evs, err := sub.Next(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		n += len(evs)
	}
	return n
}

func BenchmarkReplay10k(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "events.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	fill(b, l, 10000)
	b.ResetTimer()
	for b.Loop() {
		replayAll(b, l)
	}
}

func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "events.jsonl"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	o := obj("assistant", 1)
	for b.Loop() {
		l.Append("assistant", o)
	}
}

// Ready hands over the live events waiting without blocking, never a
// replayed one (Next returns those first) and never one twice.
func TestReady(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	l.Append("x", obj("x", 1))
	s := l.Subscribe(0, 16)
	defer s.Close()
	l.Append("x", obj("x", 2))
	if evs := s.Ready(); len(evs) != 0 {
		t.Fatalf("Ready before the replay: %d events", len(evs))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if evs, err := s.Next(ctx); err != nil || len(evs) != 1 || evs[0].Seq != 1 {
		t.Fatalf("replay: %v %+v", err, evs)
	}
	if evs := s.Ready(); len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("Ready: %+v, want event 2", evs)
	}
	if evs := s.Ready(); len(evs) != 0 {
		t.Fatalf("Ready again: %+v", evs)
	}
	l.Append("x", obj("x", 3))
	l.Close()
	if evs := s.Ready(); len(evs) != 1 || evs[0].Seq != 3 {
		t.Fatalf("Ready at the end: %+v, want event 3", evs)
	}
	if _, err := s.Next(ctx); !errors.Is(err, ErrEnded) {
		t.Fatalf("Next after the end: %v, want ErrEnded", err)
	}
}

// TestSyncWithin: with a lag, a durable event is in the file when Append
// returns and its fsync comes later, one for the events of that time; a
// failed late fsync is the error of the next durable Append; Close does
// the pending sync itself.
func TestSyncWithin(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l := open(t, path)
	pending := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lagging != nil
	}
	l.SyncWithin(time.Hour)
	for i := 1; i <= 3; i++ {
		if _, err := l.Append("result", obj("result", i)); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(path); strings.Count(string(data), "\n") != 3 {
		t.Fatalf("the events are not written at once: %q", data)
	}
	if !pending() {
		t.Fatal("no fsync pending after durable events with a lag")
	}

	l.mu.Lock()
	l.lagging.Stop()
	l.lagging = nil
	good := l.w
	closed, err := os.Open(path)
	if err != nil {
		l.mu.Unlock()
		t.Fatal(err)
	}
	closed.Close()
	l.mu.Unlock()
	if _, err := l.Append("result", obj("result", 4)); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.w = closed // the late fsync fails, and runs now
	l.lagging.Reset(time.Millisecond)
	l.mu.Unlock()
	poll.Eventually(t, 10*time.Second, func() bool { return !pending() }, "the late fsync did not run")
	l.mu.Lock()
	l.w = good
	l.mu.Unlock()
	if _, err := l.Append("result", obj("result", 5)); err == nil || !strings.Contains(err.Error(), "sync") {
		t.Fatalf("the append after a failed late fsync: %v; want its error", err)
	}
	if _, err := l.Append("result", obj("result", 6)); err != nil {
		t.Fatalf("reported once, then: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if pending() {
		t.Fatal("Close left an fsync pending")
	}
}
