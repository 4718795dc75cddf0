package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/proc"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/worktree"
)

// OpenSession plans a session and runs its prepare stage as a job's: the
// repository resolved under the roots, the base commit, a worktree on
// branch pneuma/session/<id> (a spare from the repository's pool when there
// is one; the session's own when restoring). The session is idle; its CLI
// starts with the first message.
func OpenSession(ctx context.Context, spec *jobfile.Session, o SessionOptions) (*Session, error) {
	o.defaults()
	var plan SessionPlan
	resume := ""
	if o.Restore != nil {
		plan = o.Restore.Plan
		if plan.Job == nil {
			return nil, errors.New("restore a session: its saved state has no plan")
		}
		resume = o.Restore.CLISessionID
	} else {
		job, err := planSession(ctx, spec, o)
		if err != nil {
			return nil, err
		}
		plan = SessionPlan{Job: job, PermissionPrompt: spec.PermissionPrompt, PermissionTimeout: spec.PermissionWait()}
		resume = spec.Resume
	}
	job := *plan.Job
	job.Options.Resume = "" // the journal carries the CLI session to resume
	s := &Session{o: o, plan: plan, git: o.Git, wake: make(chan struct{}, 1), done: make(chan struct{}),
		pending: map[string]*pendingPermission{}, answered: map[string]bool{}, lastChange: "[]"}
	s.st = s.initialState(spec)
	if o.Restore != nil && job.UseWorktree {
		reapOrphan(o.Restore.CLIPid, job.Dir, 4*o.StopGrace)
	}
	if err := s.openRun(ctx, &job, resume); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.setStatus(SessionIdle)
	s.mu.Unlock()
	return s, nil
}

// openRun makes the session's run of its one job, runs its prepare stage,
// and starts the goroutine that drives it until the session ends.
func (s *Session) openRun(ctx context.Context, job *Job, resume string) error {
	o := s.o
	p := &Plan{RunID: o.ID, RunDir: string(o.Dir), Binary: o.Binary, Concurrency: 1, Limits: *o.Limits, Jobs: []*Job{job}}
	var prior *Journal
	if resume != "" || o.Restore != nil {
		prior = &Journal{JournalData: JournalData{StartedAt: time.Now().UTC(), Jobs: []*JobState{{Name: job.Name,
			State: StateRunning, SessionID: resume, WorktreeCreated: o.Restore != nil && job.UseWorktree}}}}
	}
	if err := os.MkdirAll(p.RunDir, 0o755); err != nil {
		return &EnvError{fmt.Errorf("create session directory: %w", err)}
	}
	j, err := openJournal(p, prior)
	if err != nil {
		return &EnvError{err}
	}
	j.startWriter()
	// Close parks a clean worktree (one with work stays) as a spare that
	// the next session or run of the repository reuses.
	opts := Options{Git: o.Git, Reporter: s, Keep: KeepNever, StopGrace: o.StopGrace, StderrLimit: o.StderrLimit,
		Environ: o.Environ, Prices: o.Prices, Pool: 1}
	opts.defaults()
	r := newRun(p, opts, j)
	r.client = s
	if o.Gate != nil {
		r.gate = o.Gate.g // the session's starts, storms and holds are the server's
	}
	if o.Restore == nil {
		r.loadSpare(job) // a restored session has its own worktree
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	jr, ok := r.openJob(runCtx, job)
	if !ok {
		cancel()
		r.settleParked(ctx)
		j.stopWriter()
		return &EnvError{fmt.Errorf("prepare session %s: %s", o.ID, jr.res.Error)}
	}
	s.r, s.rec, s.cancel = r, jr.rec, cancel
	go func() {
		defer close(s.done)
		defer j.stopWriter()
		res := r.driveJob(runCtx, jr)
		r.settleParked(runCtx)
		r.finished(job, &res)
		if err := j.save(); err != nil {
			res.Error = joinErr(res.Error, err.Error())
		}
		s.res = res
		s.over(res)
	}()
	return nil
}

func (o *SessionOptions) defaults() {
	if o.Git == nil {
		o.Git = worktree.New()
	}
	if o.Prices == nil {
		o.Prices = history.DefaultPrices()
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 2 * time.Second
	}
	if o.StderrLimit <= 0 {
		o.StderrLimit = 4 << 20
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Limits == nil {
		l := limitsOf(jobfile.Limits{})
		o.Limits = &l
	}
}

// initialState is the state of a new session, or the saved one of a
// restored session (idle, nothing pending: its CLI is gone).
func (s *Session) initialState(spec *jobfile.Session) SessionState {
	if r := s.o.Restore; r != nil {
		st := *r
		// Restored idle: clients were told so already, so no status event.
		st.Status, st.PendingPermissions, st.CLIPid = SessionIdle, []PendingPermission{}, 0
		s.base = accounts{cost: st.CostUSD, turns: st.NumTurns, usage: st.Usage}
		return st
	}
	j := s.plan.Job
	return SessionState{ID: s.o.ID, Name: spec.Job.Name, Status: SessionStarting, Repo: j.Repo, Base: j.Base,
		Branch: j.Branch, Worktree: j.Dir, Model: j.Options.Model, CreatedAt: time.Now().UTC(),
		CLISessionID: spec.Resume, PendingPermissions: []PendingPermission{}, Plan: s.plan}
}

// planSession plans a session's job like a job of a jobs file: repository
// and base resolved, paths, CLI options. Its problems are a *ConfigError, an
// *EnvError or an *OutsideRootsError.
func planSession(ctx context.Context, spec *jobfile.Session, o SessionOptions) (*Job, error) {
	js := spec.Job
	dir := o.WorkDir
	if js.Repo != "" {
		dir = resolvePath(o.WorkDir, js.Repo)
	}
	// The roots first, lexically and then resolved, before anything
	// touches the path: outside is a 403 that says nothing of what is there.
	label := js.Repo
	if label == "" {
		label = dir
	}
	real, err := safefile.CheckRoots(dir, o.Roots)
	if err != nil {
		return nil, &OutsideRootsError{Repo: label, Roots: o.Roots}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return nil, &ConfigError{fmt.Errorf("repo %s: no such directory", label)}
	}
	repo, err := o.Git.Root(ctx, real)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("repo %s is not inside a git repository", label)}
	}
	if !underRoots(real, o.Roots) || !underRoots(repo, o.Roots) {
		return nil, &OutsideRootsError{Repo: label, Roots: o.Roots}
	}
	j := jobBasics(0, js)
	j.Name, j.Slug, j.Repo, j.JobDir = sessionLabel(js.Name, o.ID), o.ID, repo, string(o.Dir)
	if j.BaseCommit, err = o.Git.ResolveRef(ctx, repo, j.Base); err != nil {
		return nil, &ConfigError{fmt.Errorf("base %q does not name a commit in %s", j.Base, repo)}
	}
	j.Dir = repo
	if j.UseWorktree {
		j.Branch = "pneuma/session/" + o.ID
		j.Dir = RepoLayout(repo).Worktree("sessions", o.ID)
	}
	j.Options = cliOptions(js, o.WorkDir)
	j.Options.PartialMessages = true // clients show text as it streams
	j.Options.Name = js.Name         // the CLI's display name of the session (/resume)
	if spec.ForkSession {
		j.ForkFrom = spec.Resume
	}
	j.Binary = o.Binary
	if err := sessionSandbox(j, js, o.WorkDir); err != nil {
		return nil, err
	}
	if j.Options.PermissionMode == "bypassPermissions" && !j.Sandbox.On() && o.IsRoot && envLookup(o.Environ)("IS_SANDBOX") == "" && j.Env["IS_SANDBOX"] == "" {
		return nil, &ConfigError{errors.New("permission_mode bypassPermissions as root: the Claude Code CLI refuses it; set IS_SANDBOX=1 in env")}
	}
	return j, nil
}

// reapOrphan ends the CLI a killed server left running in dir (it exits by
// itself at the end of its stdin; it gets wait for that, then SIGKILL). The
// process is only touched while its working directory is dir, so that a
// reused pid is left alone.
func reapOrphan(pid int, dir string, wait time.Duration) {
	if pid <= 0 {
		return
	}
	ours := func() bool {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		return err == nil && cwd == dir
	}
	for deadline := time.Now().Add(wait); ours() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !ours() {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = proc.Signal(p, syscall.SIGKILL) // the CLI leads its own group; gone already is fine
		_ = p.Kill()                        // and itself, should it have left the group
	}
	for deadline := time.Now().Add(5 * time.Second); ours() && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}
