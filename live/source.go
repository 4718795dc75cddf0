package live

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// maxEventLine is the longest events.jsonl line the view decodes; a longer
// one (a huge report) is read past.
const maxEventLine = 16 << 20

// readChunk bounds what one Read takes from the file.
const readChunk = 4 << 20

// Source reads a run's events.jsonl from where it left off, so that a view
// of a run still going (written by another process) follows it.
type Source struct{ tail *Tail }

// NewSource reads path (a run's events.jsonl) from its start.
func NewSource(path string) *Source { return &Source{tail: NewTail(path, maxEventLine)} }

// Read applies the events written since the last Read to st and returns
// how many it applied. A missing file is no events yet.
func (s *Source) Read(st *State) (int, error) {
	n := 0
	err := s.tail.Read(func(line []byte) {
		var e runner.Event
		if json.Unmarshal(line, &e) == nil {
			st.Apply(e)
			n++
		}
	})
	return n, err
}

// Tail reads the complete lines appended to a file since the last Read:
// a line not yet ended by its newline waits for the next Read, and a line
// longer than its limit is read past.
type Tail struct {
	path    string
	max     int
	off     int64
	partial []byte
	skip    bool // inside a line over the limit
}

// NewTail reads path from its start; lines over max bytes are skipped.
func NewTail(path string, max int) *Tail { return &Tail{path: path, max: max} }

// Read calls fn with each complete line written since the last Read (at
// most readChunk bytes a call). A missing file has no lines yet.
func (t *Tail) Read(fn func(line []byte)) error {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", t.path, err)
	}
	defer f.Close()
	buf := make([]byte, 256<<10)
	for read := 0; read < readChunk; {
		k, err := f.ReadAt(buf, t.off)
		t.off += int64(k)
		read += k
		t.lines(buf[:k], fn)
		if err == io.EOF || k == 0 {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", t.path, err)
		}
	}
	return nil
}

// lines passes on the complete lines of data, keeping the rest.
func (t *Tail) lines(data []byte, fn func([]byte)) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			t.keep(data)
			return
		}
		t.keep(data[:i])
		if !t.skip {
			fn(t.partial)
		}
		t.partial, t.skip = t.partial[:0], false
		data = data[i+1:]
	}
}

func (t *Tail) keep(b []byte) {
	if t.skip {
		return
	}
	if len(t.partial)+len(b) > t.max {
		t.partial, t.skip = t.partial[:0], true
		return
	}
	t.partial = append(t.partial, b...)
}

// FromJournal is the state of a run that has no events.jsonl (written by
// an earlier release): its journal's jobs, and what each job's result says.
func FromJournal(j *runner.JournalData) *State {
	st := NewState()
	st.RunID, st.Total, st.Start = j.RunID, len(j.Jobs), j.StartedAt
	if j.Plan != nil {
		st.BudgetUSD = j.Plan.BudgetUSD
	}
	for _, js := range j.Jobs {
		st.SpentUSD += js.SpentUSD
		switch js.State {
		case runner.StateRunning:
			st.Running[js.Name] = &Job{Name: js.Name, Started: js.StartedAt, Attempt: js.Attempt, CostUSD: js.SpentUSD,
				Doing: Activity{Kind: KindThinking, What: "running (no events.jsonl: an older run)", Since: js.StartedAt}}
		case runner.StateFinished:
			st.Done = append(st.Done, &Job{Name: js.Name, Started: js.StartedAt, Result: js.Result, CostUSD: js.SpentUSD})
		}
	}
	if j.Status != "" && j.Status != runner.StateRunning {
		st.Ended, st.Status, st.EndTime = true, j.Status, j.UpdatedAt
	}
	return st
}

// FromReport fills a state's finished jobs and end from a run's report,
// for a run whose events.jsonl was cut short.
func (s *State) FromReport(r *report.Report) {
	if s.Ended {
		return
	}
	seen := map[string]bool{}
	for _, j := range s.Done {
		seen[j.Name] = true
	}
	for i := range r.Jobs {
		if j := &r.Jobs[i]; !seen[j.Name] {
			delete(s.Running, j.Name)
			s.Done = append(s.Done, &Job{Name: j.Name, Result: j, CostUSD: j.CostUSD, Turns: j.NumTurns})
		}
	}
	s.Ended, s.Status = true, string(r.Status)
	s.Total = max(s.Total, len(r.Jobs))
	if s.EndTime.IsZero() {
		s.EndTime = r.FinishedAt
	}
	if s.Start.IsZero() {
		s.Start = r.StartedAt
	}
}
