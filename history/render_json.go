package history

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// jsonRenderer streams the normalised JSON structure:
//
//	{"schema":"pneuma.history.session/v1", "session_id", "path", "project",
//	 "git_branch", "cli_version", "started",
//	 "entries": [Record…],          (a "subagent" Record nests its own "entries")
//	 "usage": Totals, "read_stats": ReadStats}
type jsonRenderer struct {
	w     *bufio.Writer
	first []bool // per nesting level: no entry written yet
	err   error
}

func newJSONRenderer(w io.Writer) renderer {
	return &jsonRenderer{w: bufio.NewWriterSize(w, 64<<10)}
}

func (j *jsonRenderer) write(s string) {
	if j.err == nil {
		_, j.err = j.w.WriteString(s)
	}
}

// open writes v's object without its closing brace.
func (j *jsonRenderer) open(v any) {
	b, err := marshalNoEscape(v)
	if err != nil {
		j.err = err
		return
	}
	j.write(string(bytes.TrimSuffix(b, []byte("}"))))
}

func (j *jsonRenderer) sep(depth int) {
	if j.first[len(j.first)-1] {
		j.first[len(j.first)-1] = false
	} else {
		j.write(",")
	}
	j.write("\n" + strings.Repeat("  ", depth+1))
}

func (j *jsonRenderer) begin(h Header) error {
	j.open(h)
	j.write(`,"entries":[`)
	j.first = append(j.first, true)
	return j.flush()
}

func (j *jsonRenderer) record(r *Record, depth int) error {
	b, err := marshalNoEscape(r)
	if err != nil {
		return err
	}
	j.sep(depth)
	j.write(string(b))
	return j.err
}

func (j *jsonRenderer) beginSub(r *Record, depth int) error {
	j.sep(depth)
	j.open(r)
	j.write(`,"entries":[`)
	j.first = append(j.first, true)
	return j.err
}

func (j *jsonRenderer) endSub(r *Record, depth int) error {
	j.first = j.first[:len(j.first)-1]
	j.write("]}")
	return j.err
}

func (j *jsonRenderer) end(f Footer) error {
	j.write("\n],")
	b, err := marshalNoEscape(f)
	if err != nil {
		return err
	}
	j.write(string(bytes.TrimPrefix(b, []byte("{"))))
	j.write("\n")
	return j.flush()
}

func (j *jsonRenderer) flush() error {
	if j.err != nil {
		return j.err
	}
	return j.w.Flush()
}
