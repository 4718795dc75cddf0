package history

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// writeBigSession writes a transcript of about size bytes: turns of a
// prompt, a two-line response with a tool call, and a 2 KB tool result.
func writeBigSession(t testing.TB, size int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "projects", "-p", "b0000000-0000-4000-8000-000000000000.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	out := strings.Repeat("ok  \tpkg/some/thing\t0.012s\\n", 80)
	n := 0
	for i := 0; n < size; i++ {
		k, _ := fmt.Fprintf(w, `{"type":"user","uuid":"u%d","cwd":"/p","timestamp":"2026-11-20T10:00:00Z","message":{"role":"user","content":"Run the tests, round %d."}}`+"\n", i, i)
		n += k
		for j, block := range []string{`{"type":"text","text":"Running them now."}`, fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"go test ./..."}}`, i)} {
			k, _ = fmt.Fprintf(w, `{"type":"assistant","uuid":"a%d-%d","requestId":"r%d","timestamp":"2026-11-20T10:00:01Z","message":{"id":"m%d","model":"claude-sonnet-4-5-20250929","content":[%s],"usage":{"input_tokens":10,"output_tokens":%d}}}`+"\n", i, j, i, i, block, 5+j*100)
			n += k
		}
		k, _ = fmt.Fprintf(w, `{"type":"user","uuid":"t%d","timestamp":"2026-11-20T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}}`+"\n", i, i, out)
		n += k
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// heapProbe is an export's destination that records the live heap as the
// output streams, and how much had been allocated when the first byte came.
type heapProbe struct {
	written, next int
	peak          uint64
	firstAlloc    uint64
	base          uint64
}

func (h *heapProbe) Write(p []byte) (int, error) {
	if h.written == 0 || h.written >= h.next {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if h.written == 0 {
			h.firstAlloc = ms.TotalAlloc - h.base
		}
		h.peak = max(h.peak, ms.HeapAlloc)
		h.next = h.written + 256<<10
	}
	h.written += len(p)
	return len(p), nil
}

func exportProbe(t *testing.T, path string, f Format) *heapProbe {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := &heapProbe{base: ms.TotalAlloc}
	if err := Export(context.Background(), h, path, ExportOptions{Format: f}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestExportStreamsInBoundedMemory: the live heap while exporting a 40 MB
// session is about what a 4 MB one needs, and output starts before the
// transcript has been read (judged by bytes allocated, not by time).
func TestExportStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 44 MB")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	small, large := writeBigSession(t, 4<<20), writeBigSession(t, 40<<20)
	for _, f := range []Format{FormatMarkdown, FormatJSON} {
		hs, hl := exportProbe(t, small, f), exportProbe(t, large, f)
		t.Logf("%s: peak heap %d MB (4 MB session), %d MB (40 MB session); %d KB allocated before the first byte",
			f, hs.peak>>20, hl.peak>>20, hl.firstAlloc>>10)
		if hl.peak > hs.peak+12<<20 {
			t.Errorf("%s: peak heap grows with the session: %d MB for 4 MB, %d MB for 40 MB", f, hs.peak>>20, hl.peak>>20)
		}
		if hl.firstAlloc > 4<<20 {
			t.Errorf("%s: %d MB allocated before the first byte of output", f, hl.firstAlloc>>20)
		}
	}
}
