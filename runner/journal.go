package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/report"
)

// JournalSchema versions run.json.
const JournalSchema = "pneuma.run/v1"

// Job states in the journal.
const (
	StatePending  = "pending"
	StateRunning  = "running"
	StateFinished = "finished"
)

// Journal is run.json: the plan and every job's state, rewritten atomically
// after every change so that a run killed with SIGKILL can be resumed.
type Journal struct {
	JournalData

	mu     sync.Mutex // guards JournalData and seq
	saveMu sync.Mutex // orders saves so an older snapshot never lands last
	path   string

	// seq counts the calls of sync; a snapshot takes it along, and saved
	// and saveErr (guarded by saveMu) are those of the last save.
	seq     uint64
	saved   uint64
	saveErr error
	// enc keeps, across saves, the encoding of what no longer changes
	// (guarded by saveMu).
	enc journalCache

	// dirty wakes the background writer; changes that arrive while it
	// writes are coalesced into its next write.
	dirty   chan struct{}
	stopped chan struct{}
	quit    chan struct{} // closed by stopWriter: no more pauses
}

// JournalData is what run.json holds.
type JournalData struct {
	Schema    string      `json:"schema"`
	RunID     string      `json:"run_id"`
	Status    string      `json:"status"`
	StartedAt time.Time   `json:"started_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	Plan      *Plan       `json:"plan"`
	Jobs      []*JobState `json:"jobs"`
}

// startWriter starts the goroutine that saves the journal after touch.
// Under heavy disk load an fsync can take a second; jobs must not wait for
// it on their way, only where durability matters (a finished job).
func (j *Journal) startWriter() {
	j.dirty = make(chan struct{}, 1)
	j.stopped, j.quit = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(j.stopped)
		for range j.dirty {
			_ = j.save() // a failed background save is retried by the next, and reported by the job's own save
			// Changes that come meanwhile wait for the next save: a save
			// costs as much as the whole journal, and a run of hundreds of
			// jobs changes it many times a second. A finished job does not
			// wait (sync); a kill loses at most this much of the rest.
			t := time.NewTimer(writerPause)
			select {
			case <-t.C:
			case <-j.quit:
			}
			t.Stop()
		}
	}()
}

// writerPause is the least time between two saves of the background writer.
const writerPause = 100 * time.Millisecond

// touch schedules a save without waiting for it.
func (j *Journal) touch() {
	select {
	case j.dirty <- struct{}{}:
	default: // a save is already pending; it will include this change
	}
}

// stopWriter ends the writer after its pending save.
func (j *Journal) stopWriter() {
	close(j.quit)
	close(j.dirty)
	<-j.stopped
}

// JobState is one job's progress in the journal.
type JobState struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Attempt is the number of the attempt running or last run.
	Attempt int `json:"attempt,omitempty"`
	// SessionID is the CLI session to continue when the job is resumed.
	SessionID string `json:"session_id,omitempty"`
	// WorktreeCreated says the job's worktree exists (resume reuses it).
	WorktreeCreated bool `json:"worktree_created,omitempty"`
	// SpentUSD is what finished attempts of an unfinished job cost.
	SpentUSD float64 `json:"spent_usd,omitempty"`
	// Attempts are the finished attempts of an unfinished job.
	Attempts  []report.Attempt `json:"attempts,omitempty"`
	StartedAt time.Time        `json:"started_at,omitzero"`
	Result    *report.Job      `json:"result,omitempty"`
}

// JournalPath is where a run's journal lives.
func JournalPath(runDir string) string { return RunDir(runDir).Journal() }

// ReadJournal reads run.json of a run directory.
func ReadJournal(runDir string) (*Journal, error) {
	path := JournalPath(runDir)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no run journal at %s", path)
		}
		return nil, fmt.Errorf("read run journal: %w", err)
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("read run journal %s: %w", path, err)
	}
	if j.Schema != JournalSchema {
		return nil, fmt.Errorf("run journal %s has schema %q, want %q", path, j.Schema, JournalSchema)
	}
	j.path = path
	return &j, nil
}

// openJournal creates run.json for a plan, carrying the states of a prior
// journal (resume) for the jobs that are still in the plan.
func openJournal(p *Plan, prior *Journal) (*Journal, error) {
	j := &Journal{
		JournalData: JournalData{
			Schema:    JournalSchema,
			RunID:     p.RunID,
			Status:    "running",
			StartedAt: time.Now().UTC(),
			Plan:      p,
		},
		path: JournalPath(p.RunDir),
	}
	old := map[string]*JobState{}
	if prior != nil {
		j.StartedAt = prior.StartedAt
		for _, s := range prior.Jobs {
			old[s.Name] = s
		}
	}
	for _, job := range p.Jobs {
		if s, ok := old[job.Name]; ok {
			j.Jobs = append(j.Jobs, reopen(s))
			continue
		}
		j.Jobs = append(j.Jobs, &JobState{Name: job.Name, State: StatePending})
	}
	return j, j.save()
}

// reopen returns a resumed job's state: a job the run stopped short of
// finishing (Ctrl-C, fail-fast) is continued like one pneuma was killed
// in. An interrupted job goes on in its worktree and session; a job skipped
// because the run stopped starts afresh. Every other result stays.
func reopen(s *JobState) *JobState {
	if s.State != StateFinished || s.Result == nil {
		return s
	}
	stopped := s.Result.Reason == report.ReasonInterrupted || s.Result.Reason == report.ReasonFailFast
	c := *s
	switch {
	case s.Result.Status == report.StatusInterrupted:
		c.State, c.Result = StateRunning, nil
	case s.Result.Status == report.StatusSkipped && stopped:
		c.State, c.Result = StatePending, nil
	default:
		return s
	}
	return &c
}

func (j *Journal) state(name string) *JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range j.Jobs {
		if s.Name == name {
			c := *s
			return &c
		}
	}
	return nil
}

// update changes one job's state under the journal's lock.
func (j *Journal) update(name string, f func(*JobState)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, s := range j.Jobs {
		if s.Name == name {
			f(s)
			return
		}
	}
}

func (j *Journal) finish(r *report.Report) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Status = r.Status
}

// save writes the journal atomically: temp file, fsync, rename, fsync dir.
func (j *Journal) save() error {
	j.saveMu.Lock()
	defer j.saveMu.Unlock()
	return j.saveLocked()
}

// sync makes the changes made before it durable, as save does, but shares
// saves: callers that arrive while a save runs wait for it, and the first
// of them saves once for all (a group commit). Each finished job syncs;
// saving the whole journal once per job made a run's CPU grow with the
// square of its jobs (docs/limits.md).
func (j *Journal) sync() error {
	j.mu.Lock()
	j.seq++
	mine := j.seq
	j.mu.Unlock()
	j.saveMu.Lock()
	defer j.saveMu.Unlock()
	if j.saved >= mine {
		return j.saveErr // a save that began after the change covered it
	}
	return j.saveLocked()
}

// saveLocked saves the journal; j.saveMu is held.
func (j *Journal) saveLocked() error {
	d, seq := j.snapshot()
	data, err := j.enc.encode(d)
	if err != nil {
		err = fmt.Errorf("encode run journal: %w", err)
	} else {
		err = writeFileAtomic(j.path, append(data, '\n'))
	}
	j.saved, j.saveErr = seq, err
	return err
}

// snapshot copies the journal under its lock, so that encoding it (a few
// milliseconds for a big run on a busy machine) never holds up a job that
// records its progress. A JobState's slices and result are replaced, never
// changed in place, once they are in the journal.
func (j *Journal) snapshot() (JournalData, uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.UpdatedAt = time.Now().UTC()
	d := j.JournalData
	d.Jobs = make([]*JobState, len(j.Jobs))
	for i, s := range j.Jobs {
		c := *s
		d.Jobs[i] = &c
	}
	return d, j.seq
}

// writeFileAtomic replaces path with data so that a crash leaves either the
// old or the new content, never a torn file.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// journalCache encodes run.json reusing what earlier saves encoded: the
// plan, which does not change once the run has started, and the state of
// each finished job. Encoding the whole journal on every save made a run's
// CPU grow with the square of its jobs (docs/limits.md). It is compact:
// indenting doubled the cost (jq reads it either way).
type journalCache struct {
	plan     *Plan
	planJSON json.RawMessage
	finished map[string]finishedJSON
}

// finishedJSON is the encoding of a finished job's state with its result.
type finishedJSON struct {
	result *report.Job
	data   json.RawMessage
}

// journalHead is JournalData without its plan and jobs.
type journalHead struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// encode returns d as run.json.
func (c *journalCache) encode(d JournalData) ([]byte, error) {
	if c.plan != d.Plan || c.planJSON == nil {
		data, err := json.Marshal(d.Plan)
		if err != nil {
			return nil, err
		}
		c.plan, c.planJSON = d.Plan, data
	}
	if c.finished == nil {
		c.finished = map[string]finishedJSON{}
	}
	head, err := json.Marshal(journalHead{Schema: d.Schema, RunID: d.RunID, Status: d.Status, StartedAt: d.StartedAt, UpdatedAt: d.UpdatedAt})
	if err != nil {
		return nil, err
	}
	// Assembled by hand: json.Marshal would scan every cached part again.
	buf := append(head[:len(head)-1], `,"plan":`...)
	buf = append(append(buf, c.planJSON...), `,"jobs":[`...)
	for i, s := range d.Jobs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if e, ok := c.finished[s.Name]; ok && s.State == StateFinished && e.result == s.Result {
			buf = append(buf, e.data...)
			continue
		}
		data, err := json.Marshal(s)
		if err != nil {
			return nil, err
		}
		buf = append(buf, data...)
		if s.State == StateFinished && s.Result != nil {
			c.finished[s.Name] = finishedJSON{result: s.Result, data: data}
		}
	}
	return append(buf, "]}"...), nil
}
