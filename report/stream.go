package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// JobSource walks a report's jobs in order, one at a time, calling fn for
// each; an error of fn stops the walk and is returned. A source lets a
// report of ten thousand jobs be written, rendered and merged without all
// of them in memory at once (the runner's come from its run directory).
type JobSource func(fn func(*Job) error) error

// EncodedJobSource walks a report's jobs in order like a JobSource, each
// as the bytes json.Marshal makes of it; the bytes are fn's only during
// its call.
type EncodedJobSource func(fn func(data []byte) error) error

// Streamed returns r with its jobs taken from src instead of r.Jobs
// (which must be nil). r.Totals must already count them: writers read it
// before the jobs.
func Streamed(r Report, src JobSource) *Report {
	r.Jobs, r.source, r.encoded, r.file = nil, src, nil, ""
	return &r
}

// StreamedEncoded is Streamed with the same jobs also from enc, already
// encoded: the JSON writers copy those bytes (indented) instead of
// decoding each job and encoding it again, which made writing a report
// of ten thousand jobs the largest burst of garbage of a run (issue 27).
func StreamedEncoded(r Report, src JobSource, enc EncodedJobSource) *Report {
	s := Streamed(r, src)
	s.encoded = enc
	return s
}

// EachJob calls fn for every job of r in order: r.Jobs, or the source of
// a streamed report. fn must not keep the pointer past its call.
func (r *Report) EachJob(fn func(*Job) error) error {
	if r.source != nil {
		return r.source(fn)
	}
	for i := range r.Jobs {
		if err := fn(&r.Jobs[i]); err != nil {
			return err
		}
	}
	return nil
}

// IsStreamed reports whether r's jobs come from a source rather than r.Jobs.
func (r *Report) IsStreamed() bool { return r.source != nil }

// Load returns r with every job in r.Jobs (a streamed report's read into
// memory): for callers that need them all at once and know there are few.
func (r *Report) Load() (*Report, error) {
	if r.source == nil {
		return r, nil
	}
	c := *r
	c.source, c.encoded, c.file, c.Jobs = nil, nil, "", make([]Job, 0, r.Totals.Jobs)
	err := r.EachJob(func(j *Job) error {
		c.Jobs = append(c.Jobs, *j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// EncodeTo writes r as JSON to w one job at a time: indented as WriteJSON
// stores it when indent is set (the same bytes Encode returns), else compact.
// Each job is as EachEncodedJob gives it: a report file's (the report of a
// finished run, streamed to --json's run_finished) is copied as written,
// never decoded and encoded again.
func EncodeTo(w io.Writer, r *Report, indent bool) error {
	head := *r
	head.Jobs, head.source, head.encoded, head.file = []Job{}, nil, nil, ""
	var data []byte
	var err error
	if indent {
		data, err = json.MarshalIndent(head, "", "  ")
	} else {
		data, err = json.Marshal(head)
	}
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	mark := []byte(`"jobs":[]`)
	if indent {
		mark = []byte(`"jobs": []`)
	}
	at := bytes.Index(data, mark)
	if at < 0 {
		return errors.New("encode report: no jobs member") // cannot happen: Report always has one
	}
	cut := at + len(mark) - 1 // before the "]"
	if _, err := w.Write(data[:cut]); err != nil {
		return err
	}
	jw := jobWriter{w: w, indent: indent}
	if err := r.EachEncodedJob(jw.write); err != nil {
		return err
	}
	if indent && jw.n > 0 {
		if _, err := io.WriteString(w, "\n  "); err != nil {
			return err
		}
	}
	_, err = w.Write(data[cut:])
	return err
}

// jobWriter writes the jobs of a report's list, each given as json.Marshal
// encodes it: indented into one buffer it reuses (json.MarshalIndent is
// json.Marshal then json.Indent: the same bytes), or as they are.
type jobWriter struct {
	w      io.Writer
	indent bool
	n      int
	buf    bytes.Buffer
}

func (jw *jobWriter) write(data []byte) error {
	sep := ","
	if jw.n == 0 {
		sep = ""
	}
	jw.n++
	if !jw.indent {
		if _, err := io.WriteString(jw.w, sep); err != nil {
			return err
		}
		_, err := jw.w.Write(data)
		return err
	}
	jw.buf.Reset()
	jw.buf.WriteString(sep + "\n    ")
	if err := json.Indent(&jw.buf, data, "    ", "  "); err != nil {
		return fmt.Errorf("encode job %d: %w", jw.n, err)
	}
	_, err := jw.w.Write(jw.buf.Bytes())
	return err
}

// OpenJSON reads the report at path without its jobs, which stay on disk:
// the returned report is streamed, each walk of its jobs reading the file
// again. It checks the schema as ReadJSON does. The totals are the
// file's (Validate checks them); a file changed between two walks is the
// caller's problem.
func OpenJSON(path string) (*Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	var r Report
	if err := walkJSON(f, &r, func(*Job) error { return nil }); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	if r.Schema != Schema {
		if r.Schema == "" {
			return nil, fmt.Errorf("read report %s: not a pneuma report: no \"schema\" field", path)
		}
		return nil, fmt.Errorf("read report %s: unsupported report schema %q (this pneuma reads %q)", path, r.Schema, Schema)
	}
	return StreamFile(r, path), nil
}

// StreamFile returns r with its jobs read from the report file at path,
// one at a time, on each walk; r holds everything else (the file's own
// members other than jobs are not read).
func StreamFile(r Report, path string) *Report {
	s := Streamed(r, func(fn func(*Job) error) error {
		return walkFile(path, func(dec *json.Decoder) error { return walkJobs(dec, fn) })
	})
	s.file = path
	return s
}

// walkFile opens the report file at path and walks its jobs with jobs.
func walkFile(path string, jobs func(*json.Decoder) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read report: %w", err)
	}
	defer f.Close()
	if err := walkObject(f, nil, jobs); err != nil {
		return fmt.Errorf("read report %s: %w", path, err)
	}
	return nil
}

// EachEncodedJob calls fn for every job of r in order, each as the bytes
// json.Marshal makes of it (fn's only during its call). A report whose
// jobs are a file's (StreamFile) gives them as the file has them, only
// compacted (the same bytes for a file pneuma wrote), without decoding
// any: a walk that skips most of them, as a page of a run's jobs does,
// costs a scan of the file.
func (r *Report) EachEncodedJob(fn func(data []byte) error) error {
	switch {
	case r.source != nil && r.encoded != nil:
		return r.encoded(fn)
	case r.source != nil && r.file != "":
		return walkFile(r.file, func(dec *json.Decoder) error { return walkEncodedJobs(dec, fn) })
	}
	return r.EachJob(func(j *Job) error {
		data, err := json.Marshal(j)
		if err != nil {
			return fmt.Errorf("encode job %s: %w", j.Name, err)
		}
		return fn(data)
	})
}

// walkJSON reads a report object from rd: its members other than jobs
// into head (when not nil), each of its jobs to fn.
func walkJSON(rd io.Reader, head *Report, fn func(*Job) error) error {
	return walkObject(rd, head, func(dec *json.Decoder) error { return walkJobs(dec, fn) })
}

// walkObject reads a report object from rd: its members other than jobs
// into head (when not nil), its jobs array with jobs.
func walkObject(rd io.Reader, head *Report, jobs func(*json.Decoder) error) error {
	dec := json.NewDecoder(bufio.NewReaderSize(rd, 64<<10))
	if err := expectDelim(dec, '{'); err != nil {
		return fmt.Errorf("not a pneuma report: %w", err)
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("decode report: %w", err)
		}
		key, _ := tok.(string)
		if key != "jobs" {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("decode report: %s: %w", key, err)
			}
			if head != nil {
				members[key] = raw
			}
			continue
		}
		if err := jobs(dec); err != nil {
			return err
		}
	}
	if head == nil {
		return nil
	}
	data, err := json.Marshal(members)
	if err != nil {
		return fmt.Errorf("decode report: %w", err)
	}
	if err := json.Unmarshal(data, head); err != nil {
		return fmt.Errorf("decode report: %w", err)
	}
	return nil
}

// walkJobs reads the jobs array at dec's position, one job at a time.
func walkJobs(dec *json.Decoder, fn func(*Job) error) error {
	if list, err := openJobs(dec); !list {
		return err
	}
	for i := 0; dec.More(); i++ {
		var j Job
		if err := dec.Decode(&j); err != nil {
			return fmt.Errorf("decode report: jobs[%d]: %w", i, err)
		}
		if err := fn(&j); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the "]"
	return err
}

// walkEncodedJobs is walkJobs with each job compacted, never decoded.
func walkEncodedJobs(dec *json.Decoder, fn func([]byte) error) error {
	if list, err := openJobs(dec); !list {
		return err
	}
	var raw json.RawMessage
	var buf bytes.Buffer
	for i := 0; dec.More(); i++ {
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("decode report: jobs[%d]: %w", i, err)
		}
		buf.Reset()
		if err := json.Compact(&buf, raw); err != nil {
			return fmt.Errorf("decode report: jobs[%d]: %w", i, err)
		}
		if err := fn(buf.Bytes()); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the "]"
	return err
}

// openJobs reads the start of a report's jobs member: list says an array
// follows ("jobs": null is none, and no error).
func openJobs(dec *json.Decoder) (list bool, err error) {
	tok, err := dec.Token()
	switch {
	case err != nil:
		return false, fmt.Errorf("decode report: jobs: %w", err)
	case tok == nil:
		return false, nil // "jobs": null
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return false, errors.New("decode report: jobs is not an array")
	}
	return true, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}
