// Package tail bounds what pneuma keeps of a child's output: Buffer keeps
// the last bytes written in memory (for error messages), File writes the
// first bytes to a log and keeps the last ones for its end.
package tail

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Buffer is an io.Writer that keeps the last Max bytes written to it. It
// is safe for concurrent use; writes never fail.
type Buffer struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int64
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

// Write keeps the end of p, and of what came before it, up to the bound.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.dropped += int64(over)
	}
	b.buf = appendBounded(b.buf, p, b.max)
	return len(p), nil
}

// readBufs are ReadFrom's buffers.
var readBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// ReadFrom reads r to its end, keeping the last bytes. os/exec copies a
// child's pipe into a Buffer with it, instead of io.Copy allocating 32 KB
// for each copy (a run starts a few git commands per job).
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	var n int64
	for {
		k, err := r.Read(*bp)
		if k > 0 {
			_, _ = b.Write((*bp)[:k]) // a Buffer's writes never fail
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// String returns the kept bytes. When earlier bytes were dropped it starts
// at the first whole UTF-8 sequence, never inside one.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.kept())
}

// Dropped is how many of the bytes written String leaves out.
func (b *Buffer) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped + int64(len(b.buf)-len(b.kept()))
}

// Last returns up to the last n bytes written (n at most the bound).
func (b *Buffer) Last(n int) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.buf
	if len(k) > n {
		k = k[len(k)-n:]
	}
	return append([]byte(nil), k...)
}

func (b *Buffer) kept() []byte {
	k := b.buf
	if b.dropped > 0 {
		for i := 0; i < utf8.UTFMax && len(k) > 0 && !utf8.RuneStart(k[0]); i++ {
			k = k[1:]
		}
	}
	return k
}

// appendBounded appends p to buf and keeps only the last max bytes, reusing
// buf's memory.
func appendBounded(buf, p []byte, max int) []byte {
	if len(p) >= max {
		return append(buf[:0], p[len(p)-max:]...)
	}
	if over := len(buf) + len(p) - max; over > 0 {
		buf = append(buf[:0], buf[over:]...)
	}
	return append(buf, p...)
}
