package history

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLine is the longest line kept; longer lines are skipped and counted.
// Real transcripts hold lines of several MB (pitfall 1).
const DefaultMaxLine = 64 << 20

// Buffer sizes of LineReader: a reader starts with firstBuf (small files
// stay cheap), moves to readBuf once a file is larger, and grows to hold the
// longest line seen, up to keepBuf; past that it shrinks back after the line
// so that one huge line does not pin memory.
const (
	firstBuf = 64 << 10
	readBuf  = 1 << 20
	keepBuf  = 16 << 20
)

// ReadStats counts what a reader skipped instead of failing.
type ReadStats struct {
	// Lines is the number of complete lines read.
	Lines int `json:"lines"`
	// Malformed is the number of lines that are not a JSON object.
	Malformed int `json:"malformed"`
	// Oversized is the number of lines longer than the limit, skipped.
	Oversized int `json:"oversized"`
	// Torn is 1 when the file ends with a line without '\n' (still being
	// written, or its writer was killed); that line is ignored.
	Torn int `json:"torn"`
	// Repaired is the number of entries kept although part of them had an
	// unexpected shape (shown as unreadable blocks).
	Repaired int `json:"repaired,omitempty"`
}

// Add accumulates o into s.
func (s *ReadStats) Add(o ReadStats) {
	s.Lines += o.Lines
	s.Malformed += o.Malformed
	s.Oversized += o.Oversized
	s.Torn += o.Torn
	s.Repaired += o.Repaired
}

// LineReader reads '\n'-terminated lines of any length with bounded memory.
// Lines are returned in place from its own buffer (no copy per line, unlike
// bufio.Reader for lines longer than its buffer). A last line without '\n'
// is not returned: it is counted as torn.
type LineReader struct {
	r          io.Reader
	buf        []byte
	start, end int // unread data is buf[start:end]
	scanned    int // buf[start:scanned] holds no '\n'
	eof        bool
	skipping   bool // inside an oversized line, discarding to its '\n'
	max        int
	Stats      ReadStats
}

// NewLineReader returns a reader of r that skips lines longer than max bytes
// (DefaultMaxLine when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &LineReader{r: r, max: max}
}

// Reset makes the reader read from r, keeping its buffer.
func (lr *LineReader) Reset(r io.Reader) {
	lr.r = r
	lr.start, lr.end, lr.scanned = 0, 0, 0
	lr.eof, lr.skipping = false, false
	lr.Stats = ReadStats{}
}

// Next returns the next complete line without its '\n' (and '\r'). The slice
// is valid until the next call. It returns io.EOF at the end of the input.
func (lr *LineReader) Next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.scanned:lr.end], '\n'); i >= 0 {
			nl := lr.scanned + i
			line := lr.buf[lr.start:nl]
			lr.start, lr.scanned = nl+1, nl+1
			if lr.skipping || len(line) > lr.max {
				lr.skipping = false
				lr.Stats.Oversized++
				continue
			}
			lr.Stats.Lines++
			return trimCR(line), nil
		}
		lr.scanned = lr.end
		if lr.eof {
			if lr.start < lr.end || lr.skipping {
				lr.Stats.Torn++
			}
			lr.start, lr.end, lr.scanned, lr.skipping = 0, 0, 0, false
			return nil, io.EOF
		}
		if err := lr.fill(); err != nil {
			return nil, err
		}
	}
}

// fill makes room and reads more data.
func (lr *LineReader) fill() error {
	pending := lr.end - lr.start
	if pending > lr.max {
		// Too long to keep: drop what we have and discard to the newline.
		lr.skipping = true
		lr.start, lr.end, lr.scanned, pending = 0, 0, 0, 0
	}
	switch {
	case lr.buf == nil:
		lr.buf = make([]byte, firstBuf)
	case pending == 0 && len(lr.buf) > keepBuf:
		lr.buf = make([]byte, readBuf)
		lr.start, lr.end, lr.scanned = 0, 0, 0
	case len(lr.buf) < readBuf:
		grown := make([]byte, readBuf)
		copy(grown, lr.buf[lr.start:lr.end])
		lr.scanned -= lr.start
		lr.end -= lr.start
		lr.start = 0
		lr.buf = grown
	case lr.start > 0 && (pending < len(lr.buf)/2 || lr.end == len(lr.buf)):
		copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.scanned -= lr.start
		lr.end = pending
		lr.start = 0
	}
	if lr.end == len(lr.buf) {
		grown := make([]byte, 2*len(lr.buf))
		copy(grown, lr.buf[lr.start:lr.end])
		lr.scanned -= lr.start
		lr.end -= lr.start
		lr.start = 0
		lr.buf = grown
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	if errors.Is(err, io.EOF) {
		lr.eof = true
		return nil
	}
	if err != nil {
		return err
	}
	if n == 0 {
		// A reader returning 0, nil repeatedly is broken; treat it as EOF
		// after a few tries rather than spinning.
		for range 8 {
			n, err = lr.r.Read(lr.buf[lr.end:])
			lr.end += n
			if n > 0 || err != nil {
				break
			}
		}
		if n == 0 && err == nil {
			return io.ErrNoProgress
		}
		if errors.Is(err, io.EOF) {
			lr.eof = true
		} else if err != nil {
			return err
		}
	}
	return nil
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
