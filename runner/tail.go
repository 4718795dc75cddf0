package runner

import (
	"fmt"
	"os"
	"sync"
)

// tailFile writes a process's stderr to a file, bounded: the first limit
// bytes go to the file as they come, later bytes only to an in-memory ring
// of the last limit/4 bytes, which Close appends after a note of how much was
// left out. Tail returns the last bytes for error messages.
type tailFile struct {
	mu      sync.Mutex
	f       *os.File
	limit   int
	written int
	dropped int64
	ring    []byte
	ringMax int
	last    []byte // last bytes seen, for Tail
}

const tailKeep = 4096

func newTailFile(path string, limit int) (*tailFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open stderr log: %w", err)
	}
	return &tailFile{f: f, limit: limit, ringMax: max(limit/4, tailKeep)}, nil
}

func (t *tailFile) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	total := len(p)
	t.last = appendBounded(t.last, p, tailKeep)
	room := t.limit - t.written
	if room > 0 {
		n := min(room, len(p))
		if _, err := t.f.Write(p[:n]); err != nil {
			return 0, err
		}
		t.written += n
		p = p[n:]
	}
	if len(p) > 0 {
		t.dropped += int64(len(p))
		t.ring = appendBounded(t.ring, p, t.ringMax)
	}
	return total, nil
}

// Tail returns up to n of the last bytes written.
func (t *tailFile) Tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.last
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Close writes the kept tail, if bytes were left out, and closes the file.
func (t *tailFile) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	if t.dropped > int64(len(t.ring)) {
		fmt.Fprintf(t.f, "\n[pneuma: %d bytes of stderr left out; the last %d follow]\n", t.dropped-int64(len(t.ring)), len(t.ring))
	}
	if len(t.ring) > 0 {
		_, _ = t.f.Write(t.ring)
	}
	err := t.f.Close()
	t.f = nil
	return err
}

func appendBounded(buf, p []byte, max int) []byte {
	if len(p) >= max {
		return append(buf[:0], p[len(p)-max:]...)
	}
	if over := len(buf) + len(p) - max; over > 0 {
		buf = append(buf[:0], buf[over:]...)
	}
	return append(buf, p...)
}
