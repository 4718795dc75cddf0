package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"

	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// The bounds of a run's snapshot and of a page of its jobs (issue 27).
const (
	// maxListedFailures is how many failed jobs a run's snapshot lists.
	maxListedFailures = 100
	// maxListedRunning is how many running jobs a run's snapshot names.
	maxListedRunning = 200
	// defaultJobsPage and maxJobsPage are the limit of a page of jobs.
	defaultJobsPage, maxJobsPage = 100, 1000
	// maxJobsPageBytes caps a page's jobs, encoded, whatever the limit; a
	// page holds at least one job.
	maxJobsPageBytes = 1 << 20
)

// jobTally is what a run remembers of its jobs: counts, the first failures
// and the names of the running ones. A finished job's entry lives on disk
// (results.jsonl, then report.json), never here.
type jobTally struct {
	totals        report.Totals
	failures      []report.Job
	failuresTotal int
	running       map[string]struct{}
}

// failed reports whether a job is listed among a run's failures: every
// job that did not succeed and was not skipped.
func failed(j *report.Job) bool { return j.Status != "succeeded" && j.Status != "skipped" }

func (t *jobTally) started(name string) {
	if t.running == nil {
		t.running = map[string]struct{}{}
	}
	t.running[name] = struct{}{}
}

func (t *jobTally) finished(name string, j *report.Job) {
	delete(t.running, name)
	if j != nil {
		t.add(j)
	}
}

func (t *jobTally) add(j *report.Job) {
	t.totals.Add(j)
	if !failed(j) {
		return
	}
	t.failuresTotal++
	if len(t.failures) < maxListedFailures {
		t.failures = append(t.failures, *j)
	}
}

// load tallies a finished run's report, one job at a time.
func (t *jobTally) load(r *report.Report) error {
	*t = jobTally{}
	err := r.EachJob(func(j *report.Job) error { t.add(j); return nil })
	t.totals = r.Totals
	return err
}

// fill puts the tally into a run's snapshot.
func (t *jobTally) fill(o *runObject) {
	o.Totals, o.FailuresTotal = t.totals, t.failuresTotal
	o.Failures = append([]report.Job{}, t.failures...)
	o.Running = make([]string, 0, min(len(t.running), maxListedRunning))
	for name := range t.running {
		o.Running = append(o.Running, name)
	}
	sort.Strings(o.Running)
	o.Running = o.Running[:min(len(o.Running), maxListedRunning)]
}

// jobsPage is GET /api/runs/{id}/jobs: finished jobs from After on.
type jobsPage struct {
	Jobs []json.RawMessage `json:"jobs"`
	// Next is the after of the next page; absent on the last page.
	Next *int `json:"next,omitempty"`
}

// errPageFull stops a walk of a run's jobs once a page is full.
var errPageFull = errors.New("page full")

// runJobs pages a run's finished jobs: the report's, in plan order, once
// it is written; before that results.jsonl's, in the order they finished.
func (s *Server) runJobs(w http.ResponseWriter, r *http.Request) {
	ru := s.runOf(w, r)
	if ru == nil {
		return
	}
	after, err1 := pageParam(r, "after", 0, -1)
	limit, err2 := pageParam(r, "limit", defaultJobsPage, maxJobsPage)
	if err := errors.Join(err1, err2); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ru.mu.Lock()
	rep := ru.report
	ru.mu.Unlock()
	page := jobsPage{Jobs: []json.RawMessage{}}
	i, size := 0, 0
	err := s.eachEncodedRunJob(ru.id, rep, func(data []byte) error {
		defer func() { i++ }()
		if i < after {
			return nil
		}
		if len(page.Jobs) == limit || (len(page.Jobs) > 0 && size+len(data) > maxJobsPageBytes) {
			next := i
			page.Next = &next
			return errPageFull
		}
		page.Jobs, size = append(page.Jobs, bytes.Clone(data)), size+len(data)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		writeError(w, http.StatusInternalServerError, "read the jobs of run %s: %v", ru.id, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// runJob answers a finished job's report entry: {job} is its name, or its
// slug when no job has that name. The entry is found by walking the run's
// jobs as written, one at a time in one request, reading only each one's
// name (see jobName): the report's up to it, or before the report all of
// results.jsonl, whose last entry of a job run again is the one answered.
// A job that has not finished has none (404).
func (s *Server) runJob(w http.ResponseWriter, r *http.Request) {
	ru := s.runOf(w, r)
	if ru == nil {
		return
	}
	job := r.PathValue("job")
	ru.mu.Lock()
	rep := ru.report
	ru.mu.Unlock()
	named := func(name string) (json.RawMessage, error) {
		var found json.RawMessage
		err := s.eachEncodedRunJob(ru.id, rep, func(data []byte) error {
			if n, err := jobName(data); err != nil || n != name {
				return err
			}
			found = bytes.Clone(data)
			if rep == nil {
				return nil // results.jsonl: a job run again has a later entry
			}
			return errJobFound
		})
		if errors.Is(err, errJobFound) {
			err = nil
		}
		return found, err
	}
	found, err := named(job)
	if found == nil && err == nil && validID(job) {
		// Not a name: a slug, whose job's name the plan holds.
		dir := string(runLayout(&s.cfg).Run(ru.id))
		if name, _, perr := runner.FindPlanned(dir, func(_, slug string) bool { return slug == job }); perr == nil && name != "" {
			found, err = named(name)
		}
	}
	switch {
	case err != nil:
		s.cfg.Logf("%s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusInternalServerError, "the jobs of run %s could not be read (the server's log says why)", ru.id)
	case found == nil:
		writeError(w, http.StatusNotFound, "no finished job %q in run %s", job, ru.id)
	default:
		writeJSON(w, http.StatusOK, found)
	}
}

// errJobFound stops a walk of a run's jobs at the one asked for.
var errJobFound = errors.New("job found")

// jobName reads the name of an encoded report job. pneuma writes it first
// (report.Job's first field), compacted: then only that string is decoded.
// Otherwise the members are skipped one by one, not decoded, until the name
// turns up. A job without one has the name "".
func jobName(data []byte) (string, error) {
	if rest, ok := bytes.CutPrefix(data, []byte(`{"name":`)); ok {
		if lit, ok := leadingString(rest); ok {
			var name string
			if err := json.Unmarshal(lit, &name); err == nil {
				return name, nil
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", errors.New("read the run's jobs: a job is no JSON object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("read the run's jobs: %w", err)
		}
		if key == "name" {
			var name string
			if err := dec.Decode(&name); err != nil {
				return "", fmt.Errorf("read the run's jobs: a name: %w", err)
			}
			return name, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", fmt.Errorf("read the run's jobs: %w", err)
		}
	}
	return "", nil
}

// leadingString returns the JSON string literal data starts with, quotes
// included: up to the first quote no backslash escapes.
func leadingString(data []byte) ([]byte, bool) {
	if len(data) == 0 || data[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return data[:i+1], true
		}
	}
	return nil, false
}

// pageParam reads a non-negative integer query parameter, at most max
// when max >= 0.
func pageParam(r *http.Request, name string, def, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || (max >= 0 && n > max) {
		if max >= 0 {
			return 0, fmt.Errorf("%s: want a whole number from 0 to %d, got %q", name, max, v)
		}
		return 0, fmt.Errorf("%s: want a whole number from 0, got %q", name, v)
	}
	if name == "limit" && n == 0 {
		n = def
	}
	return n, nil
}

// eachEncodedRunJob walks a run's finished jobs: rep's when the run has its
// report, else its results.jsonl as it stands (a line being written is
// not read yet). Each job is as json.Marshal encodes it (fn's only during
// its call), decoding none: a page far into a big run costs a scan of the
// jobs before it.
func (s *Server) eachEncodedRunJob(id string, rep *report.Report, fn func(data []byte) error) error {
	if rep != nil {
		return rep.EachEncodedJob(fn)
	}
	var raw json.RawMessage // results.jsonl's lines are json.Marshal's
	return s.eachResult(id, &raw, func() error { return fn(raw) })
}

// eachResult reads each entry of the run's results.jsonl into raw and
// calls fn, until the file ends (a torn last line ends it too). A run with
// no results yet has none.
func (s *Server) eachResult(id string, raw *json.RawMessage, fn func() error) error {
	// Regular and opened without blocking: a named pipe in its place is an
	// error, not a request that hangs.
	f, _, err := safefile.Open(runLayout(&s.cfg).Run(id).Results(), math.MaxInt64)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open job results: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	for {
		switch err := dec.Decode(raw); {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case err != nil:
			return fmt.Errorf("read job results: %w", err)
		}
		if err := fn(); err != nil {
			return err
		}
	}
}
