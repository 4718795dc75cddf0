package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/pneuma-cli/pneuma/report"
)

// resultStore keeps the report entries of a run's finished jobs on disk,
// in results.jsonl, one JSON line each, so that a run of ten thousand jobs
// does not hold them in memory: per job it remembers only where its line
// is. A job's entry is put once, when it finishes; report.json and the
// final run.json are written from the store, one job at a time.
type resultStore struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	at   []span // per job of the plan, in plan order; n == 0: none yet
}

// span is where a job's line is in the store. canon: the line is what
// json.Marshal makes of the job (put), not a line kept as it was read
// (putRaw), which may be an older pneuma's.
type span struct {
	off   int64
	n     int32
	canon bool
}

// openResults creates an empty store for jobs jobs at path.
func openResults(path string, jobs int) (*resultStore, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open job results: %w", err)
	}
	return &resultStore{path: path, f: f, at: make([]span, jobs)}, nil
}

// put stores job i's entry (again: the last one counts).
func (s *resultStore) put(i int, j *report.Job) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode result of job %s: %w", j.Name, err)
	}
	return s.putLine(i, j.Name, data, true)
}

// putRaw stores job i's entry as JSON already encoded (one line: compact).
func (s *resultStore) putRaw(i int, name string, data []byte) error {
	return s.putLine(i, name, data, false)
}

// putLine stores job i's entry, encoded as data; canon says json.Marshal
// of the job made it.
func (s *resultStore) putLine(i int, name string, data []byte, canon bool) error {
	line := make([]byte, 0, len(data)+1)
	if bytes.IndexByte(data, '\n') >= 0 { // read from a run.json someone indented
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			return fmt.Errorf("store result of job %s: %w", name, err)
		}
		data = b.Bytes()
	}
	line = append(append(line, data...), '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("store result of job %s: store closed", name)
	}
	if _, err := s.f.WriteAt(line, s.size); err != nil {
		return fmt.Errorf("store result of job %s in %s: %w", name, s.path, err)
	}
	s.at[i] = span{off: s.size, n: int32(len(line)), canon: canon}
	s.size += int64(len(line))
	return nil
}

// raw reads job i's entry back as JSON, without its newline; nil when it
// has none.
func (s *resultStore) raw(i int) ([]byte, error) {
	data, _, err := s.rawInto(i, nil)
	return data, err
}

// rawInto is raw read into buf's array when it is large enough (a walk of
// every job reuses one buffer); canon says json.Marshal of the job made it.
func (s *resultStore) rawInto(i int, buf []byte) (data []byte, canon bool, err error) {
	s.mu.Lock()
	sp, f := s.at[i], s.f
	s.mu.Unlock()
	if sp.n == 0 {
		return nil, false, nil
	}
	if f == nil {
		return nil, false, fmt.Errorf("read job result: store %s closed", s.path)
	}
	if cap(buf) < int(sp.n) {
		buf = make([]byte, sp.n)
	}
	buf = buf[:sp.n]
	if _, err := f.ReadAt(buf, sp.off); err != nil {
		return nil, false, fmt.Errorf("read job result from %s: %w", s.path, err)
	}
	return buf[:len(buf)-1], sp.canon, nil
}

// get reads job i's entry back; nil when it has none.
func (s *resultStore) get(i int) (*report.Job, error) {
	buf, err := s.raw(i)
	if err != nil || buf == nil {
		return nil, err
	}
	sp := s.at[i]
	var j report.Job
	if err := json.Unmarshal(buf, &j); err != nil {
		return nil, fmt.Errorf("read job result from %s at %d: %w", s.path, sp.off, err)
	}
	return &j, nil
}

// close closes the store and removes its file: what it held is in
// report.json and run.json now.
func (s *resultStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	_ = s.f.Close() // read and written with ReadAt/WriteAt: nothing buffered
	_ = os.Remove(s.path)
	s.f = nil
}
