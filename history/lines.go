package history

import (
	"bufio"
	"errors"
	"io"
)

// DefaultMaxLine is the longest line kept; longer lines are skipped and counted.
// Real transcripts hold lines of several MB (pitfall 1).
const DefaultMaxLine = 64 << 20

// readBufSize is the bufio buffer size: large enough that most lines are
// returned without a copy.
const readBufSize = 1 << 20

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
}

// Add accumulates o into s.
func (s *ReadStats) Add(o ReadStats) {
	s.Lines += o.Lines
	s.Malformed += o.Malformed
	s.Oversized += o.Oversized
	s.Torn += o.Torn
}

// LineReader reads '\n'-terminated lines of any length with bounded memory.
// A last line without '\n' is not returned: it is counted as torn.
type LineReader struct {
	r     *bufio.Reader
	buf   []byte
	max   int
	Stats ReadStats
}

// NewLineReader returns a reader of r that skips lines longer than max bytes
// (DefaultMaxLine when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &LineReader{r: bufio.NewReaderSize(r, readBufSize), max: max}
}

// Reset makes the reader read from r, keeping its buffers.
func (lr *LineReader) Reset(r io.Reader) {
	lr.r.Reset(r)
	lr.buf = lr.buf[:0]
	lr.Stats = ReadStats{}
}

// Next returns the next complete line without its '\n'. The slice is valid
// until the next call. It returns io.EOF at the end of the input.
func (lr *LineReader) Next() ([]byte, error) {
	// Drop a buffer grown for a huge line so that memory stays bounded.
	if cap(lr.buf) > 8<<20 {
		lr.buf = nil
	}
	lr.buf = lr.buf[:0]
	oversized := false
	for {
		frag, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			if oversized || len(lr.buf)+len(frag)-1 > lr.max {
				lr.Stats.Oversized++
				oversized = false
				lr.buf = lr.buf[:0]
				continue
			}
			lr.Stats.Lines++
			if len(lr.buf) == 0 {
				return trimCR(frag[:len(frag)-1]), nil
			}
			lr.buf = append(lr.buf, frag[:len(frag)-1]...)
			return trimCR(lr.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if oversized {
				continue
			}
			if len(lr.buf)+len(frag) > lr.max {
				oversized = true
				lr.buf = lr.buf[:0]
				continue
			}
			lr.buf = append(lr.buf, frag...)
		case errors.Is(err, io.EOF):
			if len(frag) > 0 || len(lr.buf) > 0 || oversized {
				lr.Stats.Torn++
			}
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
