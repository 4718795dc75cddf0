package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/pneuma-cli/pneuma/internal/eventlog"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// runRequest is POST /api/runs.
type runRequest struct {
	JobsFile    string   `json:"jobs_file"`
	JobsYAML    string   `json:"jobs_yaml"`
	Concurrency int      `json:"concurrency"`
	Only        []string `json:"only"`
	BudgetUSD   float64  `json:"budget_usd"`
}

// run is one run started through the server (or found on disk at start).
type run struct {
	id  string
	log *eventlog.Log

	mu      sync.Mutex
	status  string // running, or the report's status
	started time.Time
	jobs    int
	// slots are the server-wide job slots the run holds until it ends.
	slots  int
	tally  jobTally
	spent  float64
	report *report.Report
	err    string

	cancel context.CancelFunc
	done   chan struct{}
}

// runObject is a run as the API shows it: its totals, its failed jobs
// (the first maxListedFailures) and its running jobs, never every job; GET
// /api/runs/{id}/jobs pages through those (issue 27, item 4). Its size is
// bounded whatever the run's: a run of ten thousand jobs answers in a few
// kilobytes plus its failures.
type runObject struct {
	ID        string        `json:"id"`
	Status    string        `json:"status"`
	StartedAt time.Time     `json:"started_at"`
	LastSeq   int64         `json:"last_seq"`
	JobsTotal int           `json:"jobs_total"`
	SpentUSD  float64       `json:"spent_usd"`
	Totals    report.Totals `json:"totals"`
	Failures  []report.Job  `json:"failures"`
	// FailuresTotal counts every failed job; Failures lists the first ones.
	FailuresTotal int      `json:"failures_total"`
	Running       []string `json:"running"`
	// Report is the report without its jobs (page them), once written.
	Report *report.Report `json:"report"`
	Error  string         `json:"error,omitempty"`
}

func (ru *run) object() runObject {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	o := runObject{ID: ru.id, Status: ru.status, StartedAt: ru.started, LastSeq: ru.log.LastSeq(),
		JobsTotal: ru.jobs, SpentUSD: ru.spent, Error: ru.err}
	ru.tally.fill(&o)
	if ru.report != nil {
		o.Report, o.Totals = reportHead(ru.report), ru.report.Totals
	}
	return o
}

// reportHead is r without its jobs (an empty list), for the snapshot and
// the event log; GET /api/runs/{id}/jobs pages the jobs.
func reportHead(r *report.Report) *report.Report {
	head := *r
	head.Jobs = nil // and its source: Streamed sets one that streams no jobs
	return report.Streamed(head, func(func(*report.Job) error) error { return nil })
}

// Event is runner.Reporter: every run event goes to the log, with its seq.
func (ru *run) Event(ev runner.Event) {
	if ev.Type == runner.EventRunFinished && ev.Report != nil {
		// The snapshot holds the report before run_finished reaches the
		// log: a client that saw run_finished finds the finished run.
		ru.mu.Lock()
		ru.report, ru.status = ev.Report, ev.Report.Status
		ru.tally.running = nil
		ru.mu.Unlock()
	}
	if ev.Report != nil { // the log keeps the report's head: its jobs are paged
		ev.Report = reportHead(ev.Report)
	}
	err := ru.record(ev)
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.noteErr(err)
	ru.spent = ev.SpentUSD
	switch ev.Type {
	case runner.EventRunStarted:
		ru.jobs = ev.Jobs
	case runner.EventJobStarted:
		ru.tally.started(ev.Job)
	case runner.EventJobFinished:
		ru.tally.finished(ev.Job, ev.Result)
	}
}

// record appends one event to the run's log.
func (ru *run) record(ev runner.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	_, err = ru.log.Append(ev.Type, data)
	return err
}

// noteErr keeps the first failure to record an event; the caller holds mu.
func (ru *run) noteErr(err error) {
	if err != nil && ru.err == "" {
		ru.err = fmt.Sprintf("event log: %v", err)
	}
}

// fineRecorder is the Observer of a served run. It appends the fine events
// (attempts, turns, tool calls, writing, stops: runner.IsFine) to the
// run's log, beside the coarse ones the run records as its Reporter, so
// that `pneuma status` and `pneuma logs` read a served run as they read
// `pneuma run`'s; every event then goes on to next (telemetry, or nil).
// Clients of the log (WebSocket, long poll) get them like any event: each
// is small (tool input and errors are cut to a few hundred bytes) and
// encoded once for all of them.
type fineRecorder struct {
	ru   *run
	next runner.Reporter
}

// Event is runner.Reporter.
func (f fineRecorder) Event(ev runner.Event) {
	if runner.IsFine(ev.Type) {
		if err := f.ru.record(ev); err != nil {
			f.ru.mu.Lock()
			f.ru.noteErr(err)
			f.ru.mu.Unlock()
		}
	}
	if f.next != nil {
		f.next.Event(ev)
	}
}

// runRegistry holds the runs.
type runRegistry struct {
	cfg *Config
	mu  sync.Mutex
	m   map[string]*run
}

// runLayout is where the server's runs keep their run directories: the
// plan's OutputDir is the state directory, so runner.Layout places them.
func runLayout(cfg *Config) runner.Layout { return runner.Layout{Root: cfg.StateDir} }

// runEvents is a run's events.jsonl, beside its report.
func runEventsPath(cfg *Config, id string) string {
	return runner.JobDir(runLayout(cfg).Run(id)).Events()
}

// loadRuns lists the runs of earlier server lifetimes with their reports.
func loadRuns(cfg *Config) (*runRegistry, error) {
	g := &runRegistry{cfg: cfg, m: map[string]*run{}}
	ents, err := os.ReadDir(runner.StateDir(cfg.StateDir).Runs())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	for _, de := range ents {
		if _, err := os.Stat(runEventsPath(cfg, de.Name())); err != nil {
			continue
		}
		status := "lost"
		log, err := eventlog.Open(runEventsPath(cfg, de.Name()), durableTypes)
		if err != nil { // one damaged run does not keep the server from starting (serve-state)
			cfg.Logf("run %s is damaged: listed as damaged, its files kept: %v", de.Name(), err)
			status, log = "damaged", salvageLog(runEventsPath(cfg, de.Name()))
		}
		ru := &run{id: de.Name(), log: log, status: status, done: make(chan struct{})}
		close(ru.done)
		if rep, err := report.OpenJSON(runLayout(cfg).Run(ru.id).Report()); err == nil {
			ru.report, ru.status, ru.started, ru.jobs = rep, rep.Status, rep.StartedAt, rep.Totals.Jobs
			if err := ru.tally.load(rep); err != nil {
				cfg.Logf("run %s: read its failed jobs: %v", ru.id, err)
			}
		}
		g.m[ru.id] = ru
	}
	return g, nil
}

func (g *runRegistry) get(id string) *run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[id]
}

func (g *runRegistry) list() []*run {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*run, 0, len(g.m))
	for _, ru := range g.m {
		out = append(out, ru)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// running counts the runs not finished.
func (g *runRegistry) running() int {
	n := 0
	for _, ru := range g.list() {
		select {
		case <-ru.done:
		default:
			n++
		}
	}
	return n
}

// slots counts the job slots of the runs not finished.
func (g *runRegistry) slots() int {
	n := 0
	for _, ru := range g.list() {
		select {
		case <-ru.done:
		default:
			n += ru.slots
		}
	}
	return n
}

// shutdown stops every run like Ctrl-C and waits for their reports.
func (g *runRegistry) shutdown(ctx context.Context) error {
	var errs []error
	for _, ru := range g.list() {
		if ru.cancel != nil {
			ru.cancel()
		}
		select {
		case <-ru.done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("run %s still stopping: %w", ru.id, ctx.Err()))
		}
		errs = append(errs, ru.log.Close())
	}
	return errors.Join(errs...)
}

// MaxJobsFile caps a jobs file read for a client.
const MaxJobsFile = 4 << 20

// planRun reads the jobs (a file under a root, or YAML text), checks them
// against the policy and the roots before anything touches the paths they
// name, and plans them the way `pneuma run` does, with the run directory in
// the state directory.
func (s *Server) planRun(ctx context.Context, req runRequest) (*runner.Plan, error) {
	var f *jobfile.File
	var err error
	dir := s.cfg.WorkDir
	switch {
	case (req.JobsFile == "") == (req.JobsYAML == ""):
		return nil, requestProblem("jobs_file", "give exactly one of jobs_file and jobs_yaml")
	case req.JobsFile != "":
		path := runner.ResolvePath(s.cfg.WorkDir, req.JobsFile)
		if _, err := safefile.CheckRoots(path, s.cfg.Roots); err != nil {
			return nil, &PolicyError{Field: "jobs_file", Reason: fmt.Sprintf("%s is not under any root of the server", req.JobsFile)}
		}
		data, rerr := safefile.Read(path, s.cfg.Roots, MaxJobsFile)
		if rerr != nil {
			return nil, requestProblem("jobs_file", readProblem(req.JobsFile, rerr))
		}
		dir = filepath.Dir(path)
		f, err = jobfile.Decode(path, data)
	default:
		// Jobs without repo run in the server's working directory: the
		// text is read as if it were a file there.
		f, err = jobfile.Decode(filepath.Join(s.cfg.WorkDir, "jobs_yaml"), []byte(req.JobsYAML))
	}
	if err != nil {
		return nil, err
	}
	c := policyCheck{p: &s.cfg.Policy, roots: s.cfg.Roots, dir: dir, state: s.cfg.StateDir}
	if err := c.file(f); err != nil {
		return nil, err
	}
	if s.cfg.Policy.MaxBudgetUSD > 0 && req.BudgetUSD > s.cfg.Policy.MaxBudgetUSD {
		return nil, &PolicyError{Field: "budget_usd", Reason: fmt.Sprintf("above the server's cap of %g USD", s.cfg.Policy.MaxBudgetUSD)}
	}
	for i := range f.Jobs { // defaults are already in each job
		s.cfg.Policy.capJob(&f.Jobs[i])
	}
	if req.BudgetUSD == 0 && f.BudgetUSD == 0 {
		req.BudgetUSD = s.cfg.Policy.MaxBudgetUSD
	}
	p, err := runner.BuildPlan(ctx, f, runner.PlanOptions{
		RunID: runner.NewRunID(time.Now()), Concurrency: req.Concurrency, Only: req.Only, BudgetUSD: req.BudgetUSD,
		Stagger: -1, OutputDir: s.cfg.StateDir, Binary: s.cfg.Binary, Getenv: s.cfg.Getenv, IsRoot: os.Geteuid() == 0,
		Roots: s.cfg.Roots,
	})
	if err != nil {
		return nil, err
	}
	// Each repository once, not once per job: a check resolves the path
	// and every root (EvalSymlinks), and ten thousand of them were the
	// largest burst of garbage of planning, on the plan and the jobs file
	// both live: the server's peak RSS (issue 27).
	checked := map[string]bool{}
	for _, j := range p.Jobs {
		if checked[j.Repo] {
			continue
		}
		if _, err := safefile.CheckRoots(j.Repo, s.cfg.Roots); err != nil {
			return nil, &PolicyError{Field: "jobs." + j.Name + ".repo", Reason: "the job's repository is not under any root of the server"}
		}
		checked[j.Repo] = true
	}
	return p, nil
}

// requestProblem is a problem of a run request's own field (not of the jobs
// file it names), at that field's path.
func requestProblem(field, msg string) error {
	return &jobfile.DecodeError{Problems: []jobfile.Problem{{Pos: jobfile.Pos{Path: field}, Msg: msg}}}
}

// readProblem phrases a failed read of a client's file without the
// system's words for what is there.
func readProblem(name string, err error) string {
	var te *safefile.TooLargeError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return name + ": no such file"
	case errors.Is(err, safefile.ErrNotRegular):
		return name + ": not a regular file"
	case errors.As(err, &te):
		return fmt.Sprintf("%s: %v", name, te)
	}
	return name + ": cannot be read"
}

// execRun is the one call of runner's run entry point, with the settings
// `pneuma run` uses by default.
func (s *Server) execRun(ctx context.Context, p *runner.Plan, ru *run) (*report.Report, error) {
	return s.withRunNotifier(p, ru, func(o runner.Options) (*report.Report, error) { return runner.Run(ctx, p, o) })
}

// runOptions are the options of every run the server starts or resumes:
// ru records the coarse events as Reporter and the fine ones as Observer.
func (s *Server) runOptions(ru *run) runner.Options {
	o := runner.Options{
		Reporter: ru,
		Kill:     s.cfg.Kill,
		Environ:  s.cfg.Environ,
		Pool:     -1,
		Gate:     s.cfg.gate,
	}
	if s.cfg.Telemetry != nil {
		s.cfg.Telemetry(&o)
	}
	o.Observer = fineRecorder{ru: ru, next: o.Observer}
	if s.cfg.Notifier.Enabled() {
		o.Reporter = s.cfg.Notifier.Reporter(o.Reporter, s.consoleURL("runs"))
	}
	return o
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	var req runRequest
	if !decodeBody(w, r, &req, false) {
		return
	}
	restore := planningGC()
	p, err := s.planRun(r.Context(), req)
	restore()
	// The jobs file and its YAML tree are garbage once planned: collected
	// now and their pages given back, the server's heap goal does not
	// start a run of 10,000 jobs from twice its plan and file (issue 27).
	debug.FreeOSMemory()
	if err != nil {
		s.runError(w, err)
		return
	}
	slots, ok := s.runSlots(w, p)
	if !ok {
		return
	}
	log, err := eventlog.Open(runEventsPath(&s.cfg, p.RunID), durableTypes)
	if err != nil {
		s.releaseSlots(slots, nil)
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	s.launch(w, p, log, slots, nil, func(ctx context.Context, ru *run) (*report.Report, error) { return s.execRun(ctx, p, ru) })
}

// planGC counts the runs being planned: the GC percent is planGCPercent
// while any is (it is the process's, so the first sets it and the last
// puts back what was there).
var planGC struct {
	mu     sync.Mutex
	n      int
	before int
}

// planGCPercent is the GC percent while a run is planned, as `pneuma run`
// plans (cmd/run.go): a jobs file's YAML tree is the largest heap a run
// of 10,000 jobs has (about 3 KB a job), garbage once planned. At the
// server's 50 the heap grew to 36 MB while planning, and the server's
// peak RSS, 67 MB, was reached there, before the first job (issue 27).
const planGCPercent = 25

// planningGC sets the GC percent to planGCPercent until restore is called.
func planningGC() (restore func()) {
	planGC.mu.Lock()
	defer planGC.mu.Unlock()
	if planGC.n == 0 {
		planGC.before = debug.SetGCPercent(planGCPercent)
	}
	planGC.n++
	return func() {
		planGC.mu.Lock()
		defer planGC.mu.Unlock()
		if planGC.n--; planGC.n == 0 {
			debug.SetGCPercent(planGC.before)
		}
	}
}

// runSlots reserves as many of the server's job slots as are free for
// plan p, up to its concurrency; none free is a 429.
func (s *Server) runSlots(w http.ResponseWriter, p *runner.Plan) (int, bool) {
	slots := s.reserveSlots(max(1, min(p.Concurrency, len(p.Jobs))))
	if slots == 0 {
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusTooManyRequests, "%d sessions and jobs already at work (--max-jobs)", s.cfg.MaxJobs)
		return 0, false
	}
	p.Concurrency = slots
	return slots, true
}

// launch runs plan p in the background on the slots reserved for it, and
// answers the run's id (and the planner's warnings).
func (s *Server) launch(w http.ResponseWriter, p *runner.Plan, log *eventlog.Log, slots int, warnings []string, exec func(context.Context, *run) (*report.Report, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	ru := &run{id: p.RunID, log: log, status: "running", started: time.Now().UTC(), jobs: len(p.Jobs), slots: slots, cancel: cancel, done: make(chan struct{})}
	s.releaseSlots(slots, func() {
		s.runs.mu.Lock()
		s.runs.m[ru.id] = ru
		s.runs.mu.Unlock()
	})
	go func() {
		defer close(ru.done)
		defer cancel()
		rep, err := exec(ctx, ru)
		ru.mu.Lock()
		defer ru.mu.Unlock()
		if rep != nil {
			ru.report, ru.status = rep, rep.Status
			ru.tally.running = nil
		}
		if err != nil {
			ru.err, ru.status = err.Error(), "failed"
		}
		_ = ru.log.Sync() // run_finished was synced on append (durable types); this is the last flush
	}()
	writeJSON(w, http.StatusCreated, struct {
		ID       string   `json:"id"`
		Warnings []string `json:"warnings,omitempty"`
	}{ru.id, warnings})
}

// resumeRun is POST /api/runs/{id}/resume: a run the server lost (it was
// stopped mid-run, its report never written) goes on from its journal like
// `pneuma run --resume`: finished jobs stay, the rest run, none twice.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	ru := s.runOf(w, r)
	if ru == nil {
		return
	}
	ru.mu.Lock()
	status := ru.status
	ru.mu.Unlock()
	if status != "lost" {
		writeError(w, http.StatusConflict, "run %s is %s: only a lost run resumes", ru.id, status)
		return
	}
	restore := planningGC()
	p, prior, warnings, err := runner.ResumePlan(r.Context(), nil, runner.PlanOptions{
		OutputDir: s.cfg.StateDir, Binary: s.cfg.Binary, Getenv: s.cfg.Getenv, IsRoot: os.Geteuid() == 0,
		Roots: s.cfg.Roots, Stagger: -1,
	}, ru.id)
	restore()
	debug.FreeOSMemory() // the journal read is garbage but for the plan and states
	if err != nil {
		s.runError(w, err)
		return
	}
	slots, ok := s.runSlots(w, p)
	if !ok {
		return
	}
	s.launch(w, p, ru.log, slots, warnings, func(ctx context.Context, nru *run) (*report.Report, error) {
		return s.withRunNotifier(p, nru, func(o runner.Options) (*report.Report, error) { return runner.Resume(ctx, p, prior, o) })
	})
}

// runError maps planning errors: bad jobs 400 with every problem, a repo
// outside the roots 403.
func (s *Server) runError(w http.ResponseWriter, err error) {
	var oe *OutsideRootsError
	var de *jobfile.DecodeError
	var ce *runner.ConfigError
	var ee *runner.EnvError
	if policyError(w, err, "invalid run") {
		return
	}
	switch {
	case errors.As(err, &oe):
		writeError(w, http.StatusForbidden, "%v", err)
	case errors.As(err, &de):
		what := "invalid jobs file"
		if de.Problems[0].Pos.File == "" { // the request's own fields (requestProblem)
			what = "invalid run"
		}
		writeJSON(w, http.StatusBadRequest, apiError{Error: what, Problems: problemsOf(de)})
	case errors.As(err, &ce), errors.As(err, &ee):
		writeError(w, http.StatusBadRequest, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "%v", err)
	}
}

// runOf finds the {id} of the path, answering 404 itself.
func (s *Server) runOf(w http.ResponseWriter, r *http.Request) *run {
	id := r.PathValue("id")
	var ru *run
	if validID(id) {
		ru = s.runs.get(id)
	}
	if ru == nil {
		writeError(w, http.StatusNotFound, "no run %q", id)
	}
	return ru
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	out := []runObject{}
	for _, ru := range s.runs.list() {
		o := ru.object()
		o.Report = nil // the list stays small; GET /api/runs/{id} has it
		out = append(out, o)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	if ru := s.runOf(w, r); ru != nil {
		writeJSON(w, http.StatusOK, ru.object())
	}
}

// deleteRun stops a run like Ctrl-C (work committed) and returns its report.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) {
	ru := s.runOf(w, r)
	if ru == nil {
		return
	}
	if ru.cancel != nil {
		ru.cancel()
	}
	select {
	case <-ru.done:
		writeJSON(w, http.StatusOK, ru.object())
	case <-r.Context().Done():
	}
}

func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	if ru := s.runOf(w, r); ru != nil {
		s.longPoll(w, r, ru.log)
	}
}

func (s *Server) runWS(w http.ResponseWriter, r *http.Request) {
	if ru := s.runOf(w, r); ru != nil {
		s.serveWS(w, r, runTarget{ru})
	}
}

// runTarget is a run behind a WebSocket: clients follow it; they do not talk to it.
type runTarget struct{ ru *run }

func (t runTarget) eventLog() *eventlog.Log { return t.ru.log }

func (t runTarget) snapshot(last int64) any {
	o := t.ru.object()
	o.LastSeq = last
	return map[string]any{"type": "run_snapshot", "run": o, "last_seq": last}
}

func (t runTarget) handle(ctx context.Context, m clientMessage) (any, error) {
	return nil, fmt.Errorf("%s is not a message for a run", m.Type)
}
