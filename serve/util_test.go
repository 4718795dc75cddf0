package serve

import (
	"io"
	"strings"
)

type stringsReader struct{ r *strings.Reader }

func newStringsReader(s string) *stringsReader { return &stringsReader{strings.NewReader(s)} }

func (s *stringsReader) reader() io.Reader {
	if s == nil {
		return nil
	}
	return s.r
}
