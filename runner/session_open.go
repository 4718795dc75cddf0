package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/proc"
	"github.com/pneuma-cli/pneuma/worktree"
)

// OpenSession plans a session and runs its prepare stage: the repository
// resolved under the roots, the base commit, a worktree on branch
// pneuma/session/<id> (reused when restoring). The session is idle; its CLI
// starts with the first message.
func OpenSession(ctx context.Context, spec *SessionSpec, o SessionOptions) (*Session, error) {
	o.defaults()
	var plan SessionPlan
	if o.Restore != nil {
		plan = o.Restore.Plan
		if plan.Job == nil {
			return nil, errors.New("restore a session: its saved state has no plan")
		}
	} else {
		job, err := planSession(ctx, spec, o)
		if err != nil {
			return nil, err
		}
		plan = SessionPlan{Job: job, PermissionPrompt: spec.PermissionPrompt, PermissionTimeout: spec.PermissionWait()}
	}
	s := &Session{o: o, plan: plan, git: o.Git, tx: transcripts{prices: o.Prices},
		pending: map[string]*pendingPermission{}, answered: map[string]bool{}, lastChange: "[]"}
	s.st = s.initialState(spec)
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	rec, err := openRecords(o.Dir, o.StderrLimit)
	if err != nil {
		return nil, err
	}
	s.rec = rec
	if s.box, err = openBox(plan.Job, o.Environ, plan.Job.Binary); err != nil {
		_ = rec.close() // the session never opened: nothing written to keep
		return nil, err
	}
	s.mu.Lock()
	s.setStatus(SessionIdle)
	s.mu.Unlock()
	return s, nil
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
}

// initialState is the state of a new session, or the saved one of a
// restored session (idle, nothing pending: its CLI is gone).
func (s *Session) initialState(spec *SessionSpec) SessionState {
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

// prepare makes the session's worktree, or finds it again after a restart.
func (s *Session) prepare(ctx context.Context) error {
	j := s.plan.Job
	if !j.UseWorktree {
		return nil
	}
	if _, err := os.Stat(j.Dir); err == nil && s.o.Restore != nil {
		reapOrphan(s.o.Restore.CLIPid, j.Dir, 4*s.o.StopGrace)
		return nil
	}
	if err := makeWorktreeRoom(s.git, j); err != nil {
		return err
	}
	if err := s.git.Create(ctx, worktree.CreateOptions{Repo: j.Repo, Path: j.Dir, Branch: j.Branch, Base: j.BaseCommit}); err != nil {
		return &EnvError{fmt.Errorf("create worktree for session %s: %w", s.o.ID, err)}
	}
	return nil
}

// planSession plans a session's job like a job of a jobs file: repository
// and base resolved, paths, CLI options. Its problems are a *ConfigError, an
// *EnvError or an *OutsideRootsError.
func planSession(ctx context.Context, spec *SessionSpec, o SessionOptions) (*Job, error) {
	js := spec.Job
	dir := o.WorkDir
	if js.Repo != "" {
		dir = resolvePath(o.WorkDir, js.Repo)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("repo %s: %s", js.Repo, pathErr(err))}
	}
	repo, err := o.Git.Root(ctx, real)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("repo %s: %w", js.Repo, err)}
	}
	if !underRoots(real, o.Roots) || !underRoots(repo, o.Roots) {
		return nil, &OutsideRootsError{Repo: repo, Roots: o.Roots}
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
	j.Options.Resume = spec.Resume
	j.Options.PartialMessages = true // clients show text as it streams
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
