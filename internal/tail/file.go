package tail

import (
	"fmt"
	"io"
	"sync"
)

// File writes a stream to w bounded: the first head bytes go to w as they
// come, later bytes only to an in-memory tail of the last keep bytes, which
// Close writes after a note saying how much was left out. A log that stops
// at its head would lose the end, where a process says why it failed. It is
// safe for concurrent use.
type File struct {
	mu      sync.Mutex
	w       io.WriteCloser
	name    string
	head    int
	written int
	dropped int64 // bytes past the head, kept or not
	last    *Buffer
}

// NewFile returns a File over w; name says what the stream is in the note
// ("stderr"). keep also bounds Tail.
func NewFile(w io.WriteCloser, name string, head, keep int) *File {
	return &File{w: w, name: name, head: head, last: New(keep)}
}

// Write writes what fits in the head to w and keeps the rest in the tail.
// Only a failed write to w is an error.
func (f *File) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	total := len(p)
	_, _ = f.last.Write(p) // a Buffer's writes never fail
	if room := f.head - f.written; room > 0 {
		n := min(room, len(p))
		if _, err := f.w.Write(p[:n]); err != nil {
			return 0, err
		}
		f.written += n
		p = p[n:]
	}
	f.dropped += int64(len(p))
	return total, nil
}

// Tail returns up to the last n bytes written (n at most keep), whether or
// not they went to w.
func (f *File) Tail(n int) string { return string(f.last.Last(n)) }

// Close writes the kept tail of what did not fit in the head, after a note
// if bytes were left out between the two, and closes w. It is safe to call
// more than once.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w == nil {
		return nil
	}
	var err error
	if f.dropped > 0 {
		end := f.last.Last(int(min(f.dropped, int64(f.last.max))))
		if skipped := f.dropped - int64(len(end)); skipped > 0 {
			_, err = fmt.Fprintf(f.w, "\n[pneuma: %d bytes of %s left out; the last %d follow]\n", skipped, f.name, len(end))
		}
		if err == nil {
			_, err = f.w.Write(end)
		}
	}
	if cerr := f.w.Close(); err == nil {
		err = cerr
	}
	f.w = nil
	return err
}
