package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/text"
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

// Journal is a run's plan and every job's state, kept so that a run
// killed with SIGKILL can be resumed. run.json holds the plan and the states
// as they were when it was written (at the start and at the end of the run);
// in between, each change appends the job's new state as one line to
// journal.jsonl, and ReadJournal replays those lines onto run.json. A change
// costs a short append, not a rewrite of the whole journal: rewriting it
// made a run's disk writes and CPU grow with the square of its jobs.
type Journal struct {
	JournalData

	mu    sync.Mutex // guards JournalData, dirty, index and seq
	dirty []bool     // per job: changed since its state was last appended
	// pending lists the jobs dirty marks, in the order they changed: an
	// append visits them, not every job (that made a run quadratic).
	pending []int
	index   map[string]int // a job's place in Jobs, by name
	// results, when set, holds the results of finished jobs instead of
	// memory (storeResults): their states keep Result nil and stored set.
	results *resultStore
	// seq counts the calls of sync; saved and saveErr (guarded by
	// writeMu) are those of the last append that included them.
	seq uint64

	writeMu sync.Mutex // orders appends and saves
	path    string     // run.json
	logPath string     // journal.jsonl
	log     *os.File
	logSize int64 // bytes of whole lines in log
	saved   uint64
	saveErr error

	// wake wakes the background writer; changes that arrive while it
	// writes are coalesced into its next append.
	wake    chan struct{}
	stopped chan struct{}
	quit    chan struct{} // closed by stopWriter: no more pauses
}

// JournalData is what run.json holds.
type JournalData struct {
	Schema    string    `json:"schema"`
	RunID     string    `json:"run_id"`
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// NotSucceeded names, in plan order, the jobs that did not succeed:
	// written once the run ended (absent while it runs), ahead of the
	// plan, so that --rerun-failed of a run of 10,000 jobs reads a few
	// kilobytes of run.json instead of all of it (issue 27).
	NotSucceeded *[]string   `json:"not_succeeded,omitempty"`
	Plan         *Plan       `json:"plan"`
	Jobs         []*JobState `json:"jobs"`
}

// startWriter starts the goroutine that appends the changes touch
// announces. Under heavy disk load a write can stall; jobs must not wait for
// it on their way, only where durability matters (a finished job syncs).
func (j *Journal) startWriter() {
	j.wake = make(chan struct{}, 1)
	j.stopped, j.quit = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(j.stopped)
		for range j.wake {
			_ = j.appendChanges() // a failed append is retried by the next, and reported by the job's own sync
			// Changes that come meanwhile wait for the next append, so a
			// burst of progress is one write; a kill loses at most this
			// much of it (a finished job does not wait: it syncs).
			t := time.NewTimer(writerPause)
			select {
			case <-t.C:
			case <-j.quit:
			}
			t.Stop()
		}
	}()
}

// writerPause is the least time between two appends of the background writer.
const writerPause = 100 * time.Millisecond

// touch schedules an append without waiting for it.
func (j *Journal) touch() {
	select {
	case j.wake <- struct{}{}:
	default: // an append is already pending; it will include this change
	}
}

// stopWriter ends the writer after its pending append and closes the log,
// removing it when the last save left it empty (a run that ended).
func (j *Journal) stopWriter() {
	close(j.quit)
	close(j.wake)
	<-j.stopped
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	if j.log == nil {
		return
	}
	_ = j.log.Close() // every append was written; a close error loses nothing
	j.log = nil
	if j.logSize == 0 {
		_ = os.Remove(j.logPath) // an empty log replays nothing either way
	}
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

	// stored says Result is in the journal's result store, not here;
	// succeeded says whether that result is a success.
	stored, succeeded bool
	// carried is the result as run.json or its log held it, kept as
	// JSON rather than decoded (a resumed run's finished jobs: Result
	// stays nil, and the result goes to the store and run.json as it was
	// read).
	carried *carriedResult
}

// carriedResult is a result read by a resumed run: its JSON and its head.
type carriedResult struct {
	raw  json.RawMessage
	head resultHead
}

// resultHead is what a resumed run reads of a finished job's result:
// what reopen and the totals need.
type resultHead struct {
	Status     string       `json:"status"`
	Reason     string       `json:"reason"`
	CostUSD    float64      `json:"cost_usd"`
	Usage      report.Usage `json:"usage"`
	NumTurns   int          `json:"num_turns"`
	DurationMS int64        `json:"duration_ms"`
}

// job is h as much of a report entry as Totals.Add reads.
func (h *resultHead) job() *report.Job {
	return &report.Job{Status: h.Status, Reason: h.Reason, CostUSD: h.CostUSD, Usage: h.Usage, NumTurns: h.NumTurns, DurationMS: h.DurationMS}
}

// status and reason are those of the job's result in memory, raw or
// decoded; ok is false when it has none there.
func (s *JobState) status() (status, reason string, ok bool) {
	switch {
	case s.Result != nil:
		return s.Result.Status, s.Result.Reason, true
	case s.carried != nil:
		return s.carried.head.Status, s.carried.head.Reason, true
	}
	return "", "", false
}

// didSucceed reports whether the job finished with a success.
func (s *JobState) didSucceed() bool {
	if status, _, ok := s.status(); ok {
		return s.State == StateFinished && status == report.StatusSucceeded
	}
	return s.State == StateFinished && s.stored && s.succeeded
}

// Done reports whether the job finished with a result.
func (s *JobState) Done() bool {
	return s.State == StateFinished && (s.Result != nil || s.carried != nil || s.stored)
}

// wireState is a job state as decoded with its result left raw: the
// outer Result hides JobState's.
type wireState struct {
	JobState
	Result json.RawMessage `json:"result,omitempty"`
}

// state is w's JobState, its result kept raw with its head read.
func (w *wireState) state() (*JobState, error) {
	s := &w.JobState
	if len(w.Result) == 0 || string(w.Result) == "null" {
		return s, nil
	}
	var h resultHead
	if err := json.Unmarshal(w.Result, &h); err != nil {
		return nil, fmt.Errorf("result of job %s: %w", s.Name, err)
	}
	s.carried = &carriedResult{raw: w.Result, head: h}
	return s, nil
}

// JournalPath is where a run's journal lives.
func JournalPath(runDir string) string { return RunDir(runDir).Journal() }

// ReadJournal reads run.json of a run directory and replays its log.
func ReadJournal(runDir string) (*Journal, error) { return readJournal(runDir, false) }

// readJournal is ReadJournal; with raw, the finished jobs' results are
// kept as the JSON read (a resumed run moves them to its store and
// run.json as they are: decoding and encoding 9,000 results was most of
// what --resume of a run of 10,000 jobs did before its first job).
func readJournal(runDir string, raw bool) (*Journal, error) {
	path := JournalPath(runDir)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no run journal at %s", path)
		}
		return nil, fmt.Errorf("read run journal: %w", err)
	}
	defer f.Close()
	var j Journal
	if err := decodeJournal(f, &j.JournalData, raw); err != nil {
		return nil, fmt.Errorf("read run journal %s: %w", path, err)
	}
	if j.Schema != JournalSchema {
		return nil, fmt.Errorf("run journal %s has schema %q, want %q", path, j.Schema, JournalSchema)
	}
	j.path, j.logPath = path, RunDir(runDir).JournalLog()
	if err := j.replay(raw); err != nil {
		return nil, err
	}
	j.reindex()
	return &j, nil
}

// slimState is what --rerun-failed reads of a job's state.
type slimState struct {
	Name   string `json:"name"`
	Result *struct {
		Status string `json:"status"`
	} `json:"result"`
}

// unsucceeded lists, in plan order, the jobs of the run in runDir that did
// not succeed, reading run.json and its log one state at a time and of
// each only its name and status.
func unsucceeded(runDir string) ([]string, error) {
	path := JournalPath(runDir)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no run journal at %s", path)
		}
		return nil, fmt.Errorf("read run journal: %w", err)
	}
	defer f.Close()
	var states []slimState
	var listed *[]string
	schema, status := "", ""
	dec := json.NewDecoder(bufio.NewReaderSize(f, 64<<10))
	err = walkObject(dec, func(key string) error {
		switch key {
		case "schema":
			return dec.Decode(&schema)
		case "status":
			return dec.Decode(&status)
		case "not_succeeded":
			return dec.Decode(&listed)
		case "plan":
			if listed != nil && status != "running" && emptyLog(RunDir(runDir).JournalLog()) {
				return errListed // a run that ended listed them: the rest is not read
			}
		case "jobs":
			return walkArray(dec, func() error {
				var s slimState
				err := dec.Decode(&s)
				states = append(states, s)
				return err
			})
		}
		var skip json.RawMessage
		return dec.Decode(&skip)
	})
	if errors.Is(err, errListed) {
		if schema != JournalSchema {
			return nil, fmt.Errorf("run journal %s has schema %q, want %q", path, schema, JournalSchema)
		}
		return *listed, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read run journal %s: %w", path, err)
	}
	if schema != JournalSchema {
		return nil, fmt.Errorf("run journal %s has schema %q, want %q", path, schema, JournalSchema)
	}
	index := make(map[string]int, len(states))
	for i, s := range states {
		index[s.Name] = i
	}
	if err := replaySlim(RunDir(runDir).JournalLog(), states, index); err != nil {
		return nil, err
	}
	var names []string
	for _, s := range states {
		if s.Result == nil || s.Result.Status != report.StatusSucceeded {
			names = append(names, s.Name)
		}
	}
	return names, nil
}

// PlannedSlug returns the slug (the name of its directory under jobs/) of
// the job named name in the plan of the run in runDir, or "" when no job of
// the plan has that name. See FindPlanned.
func PlannedSlug(runDir, name string) (string, error) {
	_, slug, err := FindPlanned(runDir, func(n, _ string) bool { return n == name })
	return slug, err
}

// FindPlanned returns the name and slug of the first job of the plan of
// the run in runDir for which match is true, or "" and "" when there is
// none. It reads run.json one planned job at a time and stops at the
// match: a server answering a job route of a 10,000-job run neither holds
// nor decodes the whole plan.
func FindPlanned(runDir string, match func(name, slug string) bool) (name, slug string, err error) {
	path := JournalPath(runDir)
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("read run journal: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 16<<10))
	only := func(want string, read func() error) func(string) error {
		return func(key string) error {
			if key == want {
				return read()
			}
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
	}
	err = walkObject(dec, only("plan", func() error {
		return walkObject(dec, only("jobs", func() error {
			return walkArray(dec, func() error {
				var j struct {
					Name string `json:"name"`
					Slug string `json:"slug"`
				}
				if err := dec.Decode(&j); err != nil {
					return err
				}
				if match(j.Name, j.Slug) {
					name, slug = j.Name, j.Slug
					return errFound
				}
				return nil
			})
		}))
	}))
	switch {
	case errors.Is(err, errFound):
		return name, slug, nil
	case err != nil:
		return "", "", fmt.Errorf("read run journal %s: %w", path, err)
	}
	return "", "", nil
}

// errFound stops a walk that found what it looked for.
var errFound = errors.New("found")

// errListed stops the reading of a run.json whose not_succeeded was read.
var errListed = errors.New("the jobs that did not succeed are listed")

// emptyLog reports whether the journal log at path is absent or empty
// (nothing to replay onto run.json).
func emptyLog(path string) bool {
	fi, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist) || err == nil && fi.Size() == 0
}

// replaySlim applies journal.jsonl to slim states, as replay does.
func replaySlim(logPath string, states []slimState, index map[string]int) error {
	f, err := os.Open(logPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run journal log: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return nil // a torn last line, if any, is dropped
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", logPath, err)
		}
		var s slimState
		if err := json.Unmarshal(line, &s); err != nil || s.Name == "" {
			return fmt.Errorf("%s:%d: not a job state: %s", logPath, n, text.Shorten(string(line), 80))
		}
		if i, ok := index[s.Name]; ok {
			states[i] = s
		}
	}
}

// walkObject calls member for each key of the JSON object at dec's
// position; member must read the value.
func walkObject(dec *json.Decoder, member func(key string) error) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if err := member(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	_, err := dec.Token() // "}"
	return err
}

// walkArray calls elem for each element of the JSON array (or null) at
// dec's position; elem must read it.
func walkArray(dec *json.Decoder, elem func() error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil {
		return err
	}
	if tok != json.Delim('[') {
		return errors.New("not an array")
	}
	for i := 0; dec.More(); i++ {
		if err := elem(); err != nil {
			return fmt.Errorf("[%d]: %w", i, err)
		}
	}
	_, err = dec.Token() // "]"
	return err
}

// decodeJournal reads run.json from r into d one member and one job state
// at a time: a journal of ten thousand jobs is never one buffer, nor
// scanned whole before it is decoded. Unknown members are ignored, as
// json.Unmarshal would.
func decodeJournal(r io.Reader, d *JournalData, raw bool) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 64<<10))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object (%v)", err)
	}
	small := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch key, _ := tok.(string); key {
		case "plan":
			if err := dec.Decode(&d.Plan); err != nil {
				return fmt.Errorf("plan: %w", err)
			}
		case "jobs":
			if err := decodeStates(dec, d, raw); err != nil {
				return err
			}
		default:
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			small[key] = raw
		}
	}
	if _, err := dec.Token(); err != nil { // the closing "}"
		return err
	}
	data, err := json.Marshal(small)
	if err != nil {
		return err
	}
	var head JournalData
	if err := json.Unmarshal(data, &head); err != nil {
		return err
	}
	head.Plan, head.Jobs = d.Plan, d.Jobs
	*d = head
	return nil
}

// decodeStates reads the jobs array of run.json one state at a time,
// their results raw or decoded.
func decodeStates(dec *json.Decoder, d *JournalData, raw bool) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return errors.New("jobs: not an array")
	}
	for i := 0; dec.More(); i++ {
		s, err := decodeState(dec.Decode, raw)
		if err != nil {
			return fmt.Errorf("jobs[%d]: %w", i, err)
		}
		d.Jobs = append(d.Jobs, s)
	}
	_, err = dec.Token() // "]"
	return err
}

// decodeState decodes one state with decode, its result raw or decoded.
func decodeState(decode func(any) error, raw bool) (*JobState, error) {
	if !raw {
		var s JobState
		return &s, decode(&s)
	}
	var w wireState
	if err := decode(&w); err != nil {
		return nil, err
	}
	return w.state()
}

// replay applies journal.jsonl to the states read from run.json: each line
// is a job's whole state, the last one wins. A last line without its
// newline is a write cut short by a crash; it is left out. logSize is set
// to the bytes of the whole lines (where a resumed run appends).
func (j *Journal) replay(raw bool) error {
	f, err := os.Open(j.logPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read run journal log: %w", err)
	}
	defer f.Close()
	index := map[string]int{}
	for i, s := range j.Jobs {
		index[s.Name] = i
	}
	br := bufio.NewReaderSize(f, 64<<10)
	j.logSize = 0
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line, err = readLong(br, line)
		}
		if err == io.EOF {
			return nil // a torn last line, if any, is dropped
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", j.logPath, err)
		}
		s, err := decodeState(func(v any) error { return json.Unmarshal(line, v) }, raw)
		if err != nil || s.Name == "" {
			return fmt.Errorf("%s:%d: not a job state: %s", j.logPath, n, text.Shorten(string(line), 80))
		}
		j.logSize += int64(len(line))
		if i, ok := index[s.Name]; ok {
			j.Jobs[i] = s
		}
	}
}

// readLong reads the rest of a line longer than br's buffer, whose start
// ReadSlice returned.
func readLong(br *bufio.Reader, start []byte) ([]byte, error) {
	line := bytes.Clone(start)
	rest, err := br.ReadBytes('\n')
	return append(line, rest...), err
}

// openJournal creates run.json for a plan, carrying the states of a prior
// journal (resume) for the jobs that are still in the plan, and an empty log.
func openJournal(p *Plan, prior *Journal) (*Journal, error) {
	j := &Journal{
		JournalData: JournalData{
			Schema:    JournalSchema,
			RunID:     p.RunID,
			Status:    "running",
			StartedAt: time.Now().UTC(),
			Plan:      p,
		},
		path:    JournalPath(p.RunDir),
		logPath: RunDir(p.RunDir).JournalLog(),
	}
	old := map[string]*JobState{}
	if prior != nil {
		j.StartedAt = prior.StartedAt
		for _, s := range prior.Jobs {
			old[s.Name] = s
		}
	}
	var changed []int // states that are not as prior's files hold them
	for i, job := range p.Jobs {
		s, ok := old[job.Name]
		if ok {
			s = reopen(s)
		} else {
			s = &JobState{Name: job.Name, State: StatePending}
		}
		if s != old[job.Name] {
			changed = append(changed, i)
		}
		j.Jobs = append(j.Jobs, s)
	}
	j.dirty = make([]bool, len(j.Jobs))
	j.reindex()
	if prior == nil || !prior.continues(p) {
		return j, j.save()
	}
	for _, i := range changed {
		j.markDirty(i)
	}
	return j, j.continueLog(prior.logSize)
}

// continues reports whether a run of p can go on appending to the log of
// j, the journal of a run that was killed, instead of writing run.json
// again: p is j's own plan, in its run directory. A kill before the next
// save replays the log onto the same run.json, as it would have.
func (j *Journal) continues(p *Plan) bool {
	return j.path != "" && j.path == JournalPath(p.RunDir) && j.Plan == p && j.Status == "running"
}

// continueLog opens the log of a killed run to append to it after its
// whole lines (size bytes: a torn last line is cut off).
func (j *Journal) continueLog(size int64) error {
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	f, err := os.OpenFile(j.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("continue run journal log: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close() // the truncate failed: nothing was written
		return fmt.Errorf("continue run journal log: %w", err)
	}
	j.log, j.logSize = f, size
	return nil
}

// markDirty marks job i for the next append; mu is held.
func (j *Journal) markDirty(i int) {
	if !j.dirty[i] {
		j.dirty[i] = true
		j.pending = append(j.pending, i)
	}
}

// reindex maps the jobs' names to their places in Jobs.
func (j *Journal) reindex() {
	j.index = make(map[string]int, len(j.Jobs))
	for i, s := range j.Jobs {
		j.index[s.Name] = i
	}
}

// storeResults moves the results of the finished jobs into a store at
// path, and from now on those of the jobs that finish (settle), so that
// memory holds none of them. It returns the totals of the jobs that had
// finished already (a resumed run's).
func (j *Journal) storeResults(path string) (report.Totals, error) {
	var t report.Totals
	st, err := openResults(path, len(j.Jobs))
	if err != nil {
		return t, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for i, s := range j.Jobs {
		if s.State != StateFinished || s.Result == nil && s.carried == nil {
			continue
		}
		res := s.Result
		if res != nil {
			err = st.put(i, res)
		} else {
			res = s.carried.head.job()
			err = st.putRaw(i, s.Name, s.carried.raw) // as it was read: not decoded and encoded again
		}
		if err != nil {
			st.close()
			return report.Totals{}, err
		}
		t.Add(res)
		c := *s
		c.Result, c.carried = nil, nil
		c.stored, c.succeeded = true, res.Status == report.StatusSucceeded
		j.Jobs[i] = &c
	}
	j.results = st
	return t, nil
}

// settle moves a finished job's result from memory to the result store
// once its state is in the log (a state still to append keeps it).
func (j *Journal) settle(name string) error {
	j.mu.Lock()
	i, ok := j.index[name]
	if !ok || j.results == nil || j.dirty[i] {
		j.mu.Unlock()
		return nil
	}
	s := j.Jobs[i]
	res, finished := s.Result, s.State == StateFinished
	j.mu.Unlock()
	if !finished || res == nil {
		return nil
	}
	if err := j.results.put(i, res); err != nil {
		return err // it stays in memory
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Jobs[i] == s && !j.dirty[i] {
		c := *s
		c.Result, c.stored, c.succeeded = nil, true, res.Status == report.StatusSucceeded
		j.Jobs[i] = &c
	}
	return nil
}

// eachResult calls fn with the result of every finished job, in plan order,
// reading stored ones back one at a time.
func (j *Journal) eachResult(fn func(*report.Job) error) error {
	j.mu.Lock()
	n := len(j.Jobs)
	j.mu.Unlock()
	for i := range n {
		res, err := j.result(i)
		if err != nil {
			return err
		}
		if res != nil {
			if err := fn(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// eachEncoded is eachResult with every result as json.Marshal encodes it
// (report.EncodedJobSource): a stored result is copied from the store as
// it is, read into one buffer, not decoded and encoded again; the others
// (in memory, or kept as an older run.json had them) are encoded.
func (j *Journal) eachEncoded(fn func([]byte) error) error {
	j.mu.Lock()
	n := len(j.Jobs)
	j.mu.Unlock()
	var buf []byte
	for i := range n {
		j.mu.Lock()
		s, st := j.Jobs[i], j.results
		j.mu.Unlock()
		if s.Result == nil && s.carried == nil && s.stored && st != nil {
			data, canon, err := st.rawInto(i, buf)
			if err != nil {
				return err
			}
			if data != nil {
				buf = data[:cap(data)]
			}
			if canon {
				if err := fn(data); err != nil {
					return err
				}
				continue
			}
		}
		res, err := j.result(i)
		if err != nil || res == nil {
			if err != nil {
				return err
			}
			continue
		}
		data, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("encode result of job %s: %w", res.Name, err)
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	return nil
}

// result is job i's result, from memory or the store; nil when it has none.
func (j *Journal) result(i int) (*report.Job, error) {
	j.mu.Lock()
	s := j.Jobs[i]
	st := j.results
	j.mu.Unlock()
	if s.Result == nil && s.carried != nil {
		var res report.Job
		if err := json.Unmarshal(s.carried.raw, &res); err != nil {
			return nil, fmt.Errorf("result of job %s: %w", s.Name, err)
		}
		return &res, nil
	}
	if s.Result != nil || !s.stored || st == nil {
		return s.Result, nil
	}
	return st.get(i)
}

// closeResults closes the result store and removes its file.
func (j *Journal) closeResults() {
	j.mu.Lock()
	st := j.results
	j.results = nil
	j.mu.Unlock()
	if st != nil {
		st.close()
	}
}

// reopen returns a resumed job's state: a job the run stopped short of
// finishing (Ctrl-C, fail-fast, an account usage limit) is continued like
// one pneuma was killed in. An interrupted job, or one a usage limit stopped
// (its reset was beyond limits.max_wait), goes on in its worktree and
// session; a job skipped because the run stopped or the account's limit or
// reserve was reached starts afresh. Every other result stays.
func reopen(s *JobState) *JobState {
	status, reason, ok := s.status()
	if s.State != StateFinished || !ok {
		return s
	}
	stopped := reason == report.ReasonInterrupted || reason == report.ReasonFailFast || reason == report.ReasonUsageLimit
	c := *s
	switch {
	case status == report.StatusInterrupted,
		status == report.StatusFailed && reason == report.ReasonUsageLimit:
		c.State = StateRunning
	case status == report.StatusSkipped && stopped:
		c.State = StatePending
	default:
		return s
	}
	c.Result, c.carried = nil, nil
	return &c
}

func (j *Journal) state(name string) *JobState {
	j.mu.Lock()
	defer j.mu.Unlock()
	if i, ok := j.index[name]; ok {
		c := *j.Jobs[i]
		return &c
	}
	return nil
}

// update changes one job's state under the journal's lock; the next append
// (touch, sync) writes it.
func (j *Journal) update(name string, f func(*JobState)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if i, ok := j.index[name]; ok {
		f(j.Jobs[i])
		j.markDirty(i)
	}
}

func (j *Journal) finish(status string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Status = status
}

// sync makes the changes made before it survive pneuma being killed: it
// appends them to the log (no fsync: like git's own objects, the log
// reaches the disk as the kernel writes it back; run.json, written at the
// start and the end, is fsynced). Callers that arrive while an append
// runs wait for it, and the first of them appends once for all.
func (j *Journal) sync() error {
	j.mu.Lock()
	j.seq++
	mine := j.seq
	j.mu.Unlock()
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	if j.saved >= mine {
		return j.saveErr // an append that began after the change covered it
	}
	return j.appendLocked()
}

// appendChanges appends the changed states.
func (j *Journal) appendChanges() error {
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	return j.appendLocked()
}

// appendLocked writes the states changed since the last append as one
// write; writeMu is held. A write that fails is cut back off the log, so
// the log only ever holds whole lines, and its states stay dirty for the
// next append.
func (j *Journal) appendLocked() error {
	lines, changed, seq, err := j.changes()
	if err == nil && j.log == nil {
		err = errors.New("run journal log is closed")
	}
	if err == nil && len(lines) > 0 {
		if _, err = j.log.Write(lines); err != nil {
			_ = j.log.Truncate(j.logSize) // best effort: the states stay dirty either way
		} else {
			j.logSize += int64(len(lines))
		}
	}
	if err != nil {
		err = fmt.Errorf("append to run journal %s: %w", j.logPath, err)
		j.mu.Lock()
		for _, i := range changed {
			j.markDirty(i)
		}
		j.mu.Unlock()
	}
	j.saved, j.saveErr = seq, err
	return err
}

// changes encodes the changed states as lines and marks them clean. The
// copies are encoded outside the lock: a JobState's slices and result are
// replaced, never changed in place, once they are in the journal.
func (j *Journal) changes() (lines []byte, changed []int, seq uint64, err error) {
	j.mu.Lock()
	var states []JobState
	for _, i := range j.pending {
		states = append(states, *j.Jobs[i])
		changed = append(changed, i)
		j.dirty[i] = false
	}
	j.pending = j.pending[:0]
	seq = j.seq
	j.mu.Unlock()
	var buf bytes.Buffer
	for k := range states {
		if err := j.writeState(&buf, changed[k], &states[k], false, nil); err != nil {
			return nil, changed, seq, err
		}
		buf.WriteByte('\n')
	}
	return buf.Bytes(), changed, seq, nil
}

// save writes run.json whole (atomically: temp file, fsync, rename, fsync
// dir) and starts the log afresh: what it held is in run.json now. The
// states are written one at a time, stored results read back one at a time.
func (j *Journal) save() error {
	j.writeMu.Lock()
	defer j.writeMu.Unlock()
	j.mu.Lock()
	j.UpdatedAt = time.Now().UTC()
	head := j.JournalData
	head.Jobs, head.NotSucceeded = nil, nil
	if j.Status != "running" {
		names := []string{}
		for _, s := range j.Jobs {
			if !s.didSucceed() {
				names = append(names, s.Name)
			}
		}
		head.NotSucceeded = &names
	}
	states := slices.Clone(j.Jobs) // the pointers: a state is replaced, never changed, once here
	for _, i := range j.pending {
		j.dirty[i] = false
	}
	j.pending = j.pending[:0]
	seq := j.seq
	j.mu.Unlock()
	plan := head.Plan
	head.Plan = nil
	data, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("encode run journal: %w", err)
	}
	const tail = `"plan":null,"jobs":null}`
	if !bytes.HasSuffix(data, []byte(tail)) {
		return errors.New("encode run journal: plan and jobs are not its last members") // cannot happen: JournalData ends with them
	}
	err = writeFileAtomicFunc(j.path, func(w io.Writer) error {
		if _, err := w.Write(data[:len(data)-len(tail)]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, `"plan":`); err != nil {
			return err
		}
		if err := writePlan(w, plan); err != nil {
			return err
		}
		if _, err := io.WriteString(w, `,"jobs":[`); err != nil {
			return err
		}
		var buf []byte // the stored results, read one at a time into one buffer
		for i, s := range states {
			if err := j.writeState(w, i, s, i > 0, &buf); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "]}\n")
		return err
	})
	if err != nil {
		return err
	}
	// Only now: a crash before this point replays the old log onto the new
	// run.json, which holds those states already.
	if j.log == nil {
		j.log, err = os.OpenFile(j.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644)
	} else {
		err = j.log.Truncate(0)
	}
	if err != nil {
		return fmt.Errorf("start run journal log: %w", err)
	}
	j.logSize, j.saved, j.saveErr = 0, seq, nil
	return nil
}

// writePlan writes p as JSON one job at a time (its jobs are its last
// member): a plan of ten thousand jobs is never one buffer.
func writePlan(w io.Writer, p *Plan) error {
	if p == nil {
		_, err := io.WriteString(w, "null")
		return err
	}
	head := *p
	head.Jobs = nil
	data, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	const tail = `"jobs":null}`
	if !bytes.HasSuffix(data, []byte(tail)) {
		return errors.New("encode plan: jobs are not its last member") // cannot happen: Plan ends with Jobs
	}
	if _, err := w.Write(data[:len(data)-len(tail)]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `"jobs":[`); err != nil {
		return err
	}
	// Each job is encoded into one buffer (an Encoder writes what
	// json.Marshal returns, and a newline), not into a slice of its own.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i, job := range p.Jobs {
		buf.Reset()
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(job); err != nil {
			return fmt.Errorf("encode plan of job %s: %w", job.Name, err)
		}
		if _, err := w.Write(buf.Bytes()[:buf.Len()-1]); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "]}")
	return err
}

// writeState writes state s of job i as JSON (after a comma when comma
// is set). A result in the store, or one kept raw, is copied in as it
// is, not decoded and encoded again (Result is JobState's last member);
// a stored one is read into *buf when buf is not nil.
func (j *Journal) writeState(w io.Writer, i int, s *JobState, comma bool, buf *[]byte) error {
	var raw []byte
	switch {
	case s.Result != nil:
	case s.carried != nil:
		raw = s.carried.raw
	case s.stored:
		var into []byte
		if buf != nil {
			into = *buf
		}
		var err error
		if raw, _, err = j.results.rawInto(i, into); err != nil {
			return err
		}
		if buf != nil && raw != nil {
			*buf = raw[:cap(raw)]
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode state of job %s: %w", s.Name, err)
	}
	if comma {
		if _, err := io.WriteString(w, ","); err != nil {
			return err
		}
	}
	if raw == nil {
		_, err = w.Write(data)
		return err
	}
	if _, err := w.Write(data[:len(data)-1]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `,"result":`); err != nil {
		return err
	}
	if _, err := w.Write(raw); err != nil {
		return err
	}
	_, err = io.WriteString(w, "}")
	return err
}

// writeFileAtomicFunc replaces path with what write writes (buffered) so
// that a crash leaves either the old or the new content, never a torn file.
func writeFileAtomicFunc(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	bw := bufio.NewWriterSize(f, 64<<10)
	werr := write(bw)
	if werr == nil {
		werr = bw.Flush()
	}
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
