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
//
// A caller that can tell from the beginning of a line whether it needs the
// rest reads with NextPrefix, then Rest or SkipRest: a long line it does not
// need is read past without its buffer growing to hold it.
type LineReader struct {
	r          io.Reader
	buf        []byte
	start, end int // unread data is buf[start:end]
	scanned    int // buf[start:scanned] holds no '\n'
	eof        bool
	max        int
	keep       int // the buffer shrinks back to readBuf once it is larger
	Stats      ReadStats
}

// NewLineReader returns a reader of r that skips lines longer than max bytes
// (DefaultMaxLine when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &LineReader{r: r, max: max, keep: keepBuf}
}

// Reset makes the reader read from r, keeping its buffer.
func (lr *LineReader) Reset(r io.Reader) {
	lr.r = r
	lr.start, lr.end, lr.scanned = 0, 0, 0
	lr.eof = false
	lr.Stats = ReadStats{}
}

// Next returns the next complete line without its '\n' (and '\r'). The slice
// is valid until the next call. It returns io.EOF at the end of the input.
func (lr *LineReader) Next() ([]byte, error) {
	for {
		line, whole, err := lr.NextPrefix(0)
		if err != nil || whole {
			return line, err
		}
		// Longer than max: discarded to its '\n', counted oversized.
		if err := lr.SkipRest(); err != nil {
			return nil, err
		}
	}
}

// NextPrefix is Next for a caller that may not need a long line whole. When
// limit bytes or more of the next line are read and its '\n' is not, it
// returns them with whole false (valid until the next call), and the caller
// must call Rest or SkipRest before reading on. A limit <= 0 or past the
// reader's maximum line length means no limit. At the end of the input it
// returns io.EOF.
func (lr *LineReader) NextPrefix(limit int) (line []byte, whole bool, err error) {
	if limit <= 0 || limit > lr.max {
		limit = lr.max + 1
	}
	for {
		nl, err := lr.more(limit)
		if err != nil {
			return nil, false, err
		}
		if nl >= 0 {
			if line, ok := lr.take(nl); ok {
				return line, true, nil
			}
			continue
		}
		if !lr.eof {
			return lr.buf[lr.start:lr.end], false, nil
		}
		if lr.start < lr.end {
			lr.Stats.Torn++
		}
		lr.start, lr.end, lr.scanned = 0, 0, 0
		return nil, false, io.EOF
	}
}

// Rest returns the whole line NextPrefix returned the beginning of. ok is
// false when the line is dropped instead: longer than the reader's maximum
// (counted oversized) or torn at the end of the input (counted torn).
func (lr *LineReader) Rest() (line []byte, ok bool, err error) {
	nl, err := lr.more(lr.max + 1)
	switch {
	case err != nil:
		return nil, false, err
	case nl >= 0:
		line, ok = lr.take(nl)
		return line, ok, nil
	case lr.eof:
		lr.Stats.Torn++
		lr.start, lr.end, lr.scanned = 0, 0, 0
		return nil, false, nil
	}
	return nil, false, lr.SkipRest()
}

// SkipRest reads past the line NextPrefix returned the beginning of,
// counting it as Next would have (a line, an oversized line, or a torn one),
// with the buffer at its current size.
func (lr *LineReader) SkipRest() error {
	n := 0 // bytes of the line passed so far
	for {
		if i := bytes.IndexByte(lr.buf[lr.scanned:lr.end], '\n'); i >= 0 {
			nl := lr.scanned + i
			n += nl - lr.start
			lr.start, lr.scanned = nl+1, nl+1
			if n > lr.max {
				lr.Stats.Oversized++
			} else {
				lr.Stats.Lines++
			}
			return nil
		}
		n += lr.end - lr.start
		lr.start, lr.end, lr.scanned = 0, 0, 0
		if lr.eof {
			lr.Stats.Torn++
			return nil
		}
		if err := lr.fill(); err != nil {
			return err
		}
	}
}

// more reads until the line at lr.start is complete, limit bytes of it are
// buffered, or the input ends. It returns the index of the line's '\n', or
// -1 when it is not read yet.
func (lr *LineReader) more(limit int) (int, error) {
	for {
		if i := bytes.IndexByte(lr.buf[lr.scanned:lr.end], '\n'); i >= 0 {
			return lr.scanned + i, nil
		}
		lr.scanned = lr.end
		if lr.eof || lr.end-lr.start >= limit {
			return -1, nil
		}
		if err := lr.fill(); err != nil {
			return -1, err
		}
	}
}

// take consumes the line ending at buf[nl] and counts it; ok is false when
// it is longer than max (skipped).
func (lr *LineReader) take(nl int) (line []byte, ok bool) {
	line = lr.buf[lr.start:nl]
	lr.start, lr.scanned = nl+1, nl+1
	if len(line) > lr.max {
		lr.Stats.Oversized++
		return nil, false
	}
	lr.Stats.Lines++
	return trimCR(line), true
}

// fill makes room and reads more data.
func (lr *LineReader) fill() error {
	pending := lr.end - lr.start
	switch {
	case lr.buf == nil:
		lr.buf = make([]byte, firstBuf)
	case len(lr.buf) > lr.keep && pending <= readBuf/2,
		len(lr.buf) < readBuf:
		// Back to the usual size after a long line, or up to it once a
		// file is larger than a small one.
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
