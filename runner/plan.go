package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/report"
)

// Workspace is what the runner needs from git. cmd wires worktree.Manager.
type Workspace interface {
	// Root returns the top level of the repository holding dir.
	Root(ctx context.Context, dir string) (string, error)
	// ResolveRef returns the commit a ref names in repo.
	ResolveRef(ctx context.Context, repo, ref string) (string, error)
	// Exclude adds pattern to the repository's info/exclude once.
	Exclude(repo, pattern string) error
	// CreateWorktree adds a linked worktree at path on a new branch from base.
	CreateWorktree(ctx context.Context, repo, path, branch, base string) error
	// Head returns the commit checked out in dir.
	Head(ctx context.Context, dir string) (string, error)
	// Status lists uncommitted paths in dir.
	Status(ctx context.Context, dir string) ([]string, error)
	// CommitAll commits every change in dir, if there is any.
	CommitAll(ctx context.Context, dir, message string) (sha string, committed bool, err error)
	// DiffStat counts changes between two commits.
	DiffStat(ctx context.Context, dir, base, head string) (files, insertions, deletions int, err error)
	// WriteDiff writes the patch between two commits.
	WriteDiff(ctx context.Context, dir, base, head string, w io.Writer) error
	// Remove removes a clean linked worktree, keeping its branch.
	Remove(ctx context.Context, repo, path string) error
	// ReuseWorktree moves the clean linked worktree from to path and makes
	// it a fresh checkout of base on a new branch (cheaper than Remove and
	// CreateWorktree on a big tree). untouched says a WorktreeWatch vouched
	// that from is still the checkout it was made as.
	ReuseWorktree(ctx context.Context, repo, from, path, branch, base string, untouched bool) error
	// RetireWorktree detaches the clean linked worktree at path from its
	// branch and moves it to `to`, a spare for a later ReuseWorktree.
	RetireWorktree(ctx context.Context, repo, path, to string) error
	// WatchWorktree starts watching a worktree for changes.
	WatchWorktree(dir string) WorktreeWatch
	// SanitizeName turns a job name into a path and branch component.
	SanitizeName(name string) string
}

// A WorktreeWatch tells whether a worktree stayed exactly as it was when
// the watch started, so that a job that changed nothing skips the commit
// and diff scans of a big tree. It may say false when it cannot tell, never
// true when something changed.
type WorktreeWatch interface {
	Untouched() bool
	// Rearm carries the watch over to the next job after an untouched
	// ReuseWorktree at the same commit moved the worktree to dir: true
	// when nothing but that reuse happened, so the watch goes on vouching
	// for the new branch (and no new watch has to walk the tree).
	Rearm(dir string) bool
	Close() error
}

// ConfigError is a mistake in the jobs file or the options (exit 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// EnvError is a problem with the machine rather than the input: not a git
// repository, no CLI, a worktree that cannot be created (exit 3).
type EnvError struct{ Err error }

func (e *EnvError) Error() string { return e.Err.Error() }
func (e *EnvError) Unwrap() error { return e.Err }

// KeepPolicy says when a job's worktree stays after the job.
type KeepPolicy string

// Keep policies.
const (
	KeepAlways    KeepPolicy = "always"
	KeepOnFailure KeepPolicy = "on-failure"
	KeepNever     KeepPolicy = "never"
)

// ParseKeepPolicy checks a --keep-worktrees value.
func ParseKeepPolicy(s string) (KeepPolicy, error) {
	switch KeepPolicy(s) {
	case KeepAlways, KeepOnFailure, KeepNever:
		return KeepPolicy(s), nil
	}
	return "", fmt.Errorf("keep-worktrees must be always, on-failure or never, not %q", s)
}

// PlanOptions are the run-level settings that shape the plan.
type PlanOptions struct {
	// Concurrency overrides the file's (0: use the file's, else the CPUs).
	Concurrency int
	// Only keeps the named jobs.
	Only []string
	// Shard keeps the jobs of one shard (zero value: all jobs).
	Shard Shard
	// OutputDir is the run directory root (default <repo of jobs file>/.pneuma).
	OutputDir string
	// RunID names the run (default: generated).
	RunID string
	// BudgetUSD overrides the file's run-wide budget when positive.
	BudgetUSD float64
	// Stagger overrides the file's start spacing when non-negative.
	Stagger time.Duration
	// Binary is the claude CLI the jobs run.
	Binary string
	// Getenv reads pneuma's environment (for the root/IS_SANDBOX check).
	Getenv func(string) string
	// IsRoot reports whether pneuma runs as root.
	IsRoot bool
}

// Plan is everything a run will do, decided before anything starts.
type Plan struct {
	RunID       string        `json:"run_id"`
	JobsFile    string        `json:"jobs_file"`
	OutputDir   string        `json:"output_dir"`
	RunDir      string        `json:"run_dir"`
	Binary      string        `json:"claude"`
	Concurrency int           `json:"concurrency"`
	BudgetUSD   float64       `json:"budget_usd,omitempty"`
	Stagger     time.Duration `json:"stagger"`
	Shard       *report.Shard `json:"shard,omitempty"`
	Jobs        []*Job        `json:"jobs"`
}

// Job is one planned job with defaults applied and every path resolved.
type Job struct {
	Name string `json:"name"`
	// Position is the job's index in the jobs file, before --only and --shard.
	Position    int            `json:"position"`
	Slug        string         `json:"slug"`
	Prompts     []string       `json:"prompts"`
	Repo        string         `json:"repo"`
	Base        string         `json:"base"`
	BaseCommit  string         `json:"base_commit"`
	Branch      string         `json:"branch,omitempty"`
	Dir         string         `json:"dir"`
	UseWorktree bool           `json:"use_worktree"`
	Commit      bool           `json:"commit"`
	Options     claude.Options `json:"options"`
	// Env is not written to run.json (it may hold tokens); a resumed run
	// takes it from the jobs file again.
	Env         map[string]string `json:"-"`
	Timeout     time.Duration     `json:"timeout,omitempty"`
	IdleTimeout time.Duration     `json:"idle_timeout,omitempty"`
	Retries     int               `json:"retries,omitempty"`
	Verify      *VerifySpec       `json:"verify,omitempty"`
	Policy      *policy.Spec      `json:"policy,omitempty"`
	// JobDir is the job's folder in the run directory.
	JobDir string `json:"job_dir"`
	// Binary overrides the plan's CLI for this job (empty: the plan's).
	Binary string `json:"claude,omitempty"`
}

// Args returns the CLI argv (without the binary) of the job's first attempt.
func (j *Job) Args() []string { return j.Options.Args() }

// NewRunID returns a sortable, unique run id: 20261122-134501-3fa9.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// BuildPlan resolves a decoded jobs file into a plan: defaults applied, jobs
// filtered (--only, --shard), prompt files read, repositories and base refs
// checked, names sanitised and checked for collisions. It touches nothing.
// Every problem is reported at once; the error is a *ConfigError or *EnvError.
func BuildPlan(ctx context.Context, f *File, ws Workspace, o PlanOptions) (*Plan, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	jobsFile, err := filepath.Abs(f.Path)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("jobs file path: %w", err)}
	}
	fileDir := filepath.Dir(jobsFile)
	p := &Plan{
		RunID:       o.RunID,
		JobsFile:    jobsFile,
		Binary:      o.Binary,
		Concurrency: f.Concurrency,
		BudgetUSD:   f.BudgetUSD,
		Stagger:     f.Stagger.Std(),
	}
	if p.RunID == "" {
		p.RunID = NewRunID(time.Now())
	}
	if o.Concurrency > 0 {
		p.Concurrency = o.Concurrency
	}
	if p.Concurrency <= 0 {
		p.Concurrency = runtime.NumCPU()
	}
	if o.BudgetUSD > 0 {
		p.BudgetUSD = o.BudgetUSD
	}
	if o.Stagger >= 0 {
		p.Stagger = o.Stagger
	} else if !f.Stagger.set() {
		p.Stagger = DefaultStagger
	}

	var cfgProblems []Problem
	var envErrs []error
	cfg := func(pos Pos, format string, args ...any) {
		cfgProblems = append(cfgProblems, Problem{Pos: pos, Msg: fmt.Sprintf(format, args...)})
	}

	// --only names must exist.
	known := map[string]bool{}
	for _, j := range f.Jobs {
		known[j.Name] = true
	}
	only := map[string]bool{}
	for _, n := range o.Only {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !known[n] {
			cfgProblems = append(cfgProblems, Problem{Pos: Pos{File: f.Path}, Msg: fmt.Sprintf("--only: no job named %q%s", n, suggest(n, sortedKeys(known)))})
		}
		only[n] = true
	}
	if o.Shard.Total > 0 {
		p.Shard = &report.Shard{Index: o.Shard.Index, Total: o.Shard.Total}
	}

	// The default repository is the one holding the jobs file.
	var defaultRepo string
	var defaultRepoErr error
	rootOf := map[string]string{}
	root := func(dir string) (string, error) {
		if r, ok := rootOf[dir]; ok {
			return r, nil
		}
		r, err := ws.Root(ctx, dir)
		if err != nil {
			return "", err
		}
		rootOf[dir] = r
		return r, nil
	}
	defaultRepo, defaultRepoErr = root(fileDir)

	slugs := map[string]string{}
	for position, spec := range f.Jobs {
		if len(only) > 0 && !only[spec.Name] {
			continue
		}
		if o.Shard.Total > 0 && !o.Shard.Contains(spec.Name) {
			continue
		}
		j := &Job{
			Name:        spec.Name,
			Position:    position,
			Slug:        ws.SanitizeName(spec.Name),
			Base:        spec.Base,
			UseWorktree: spec.Worktree == nil || *spec.Worktree,
			Commit:      spec.Commit == nil || *spec.Commit,
			Env:         spec.Env,
			Timeout:     spec.Timeout.Std(),
			IdleTimeout: spec.IdleTimeout.Std(),
			Retries:     spec.Retries,
			Verify:      spec.Verify,
			Policy:      spec.Policy,
		}
		// Case-insensitive: macOS file systems and loose refs fold case.
		if prev, ok := slugs[strings.ToLower(j.Slug)]; ok {
			cfg(spec.PosOf("name"), "job names %q and %q both become %q as a path and branch name; rename one", prev, spec.Name, j.Slug)
		}
		slugs[strings.ToLower(j.Slug)] = spec.Name
		if j.Base == "" {
			j.Base = "HEAD"
		}

		// Prompts.
		switch {
		case spec.Prompt != "":
			j.Prompts = []string{spec.Prompt}
		case len(spec.Prompts) > 0:
			j.Prompts = append([]string(nil), spec.Prompts...)
		case spec.PromptFile != "":
			path := resolvePath(fileDir, spec.PromptFile)
			data, err := os.ReadFile(path)
			switch {
			case err != nil:
				cfg(spec.PosOf("prompt_file"), "prompt_file %s: %v", spec.PromptFile, pathErr(err))
			case strings.TrimSpace(string(data)) == "":
				cfg(spec.PosOf("prompt_file"), "prompt_file %s is empty", spec.PromptFile)
			default:
				j.Prompts = []string{string(data)}
			}
		}

		// Repository and base.
		if spec.Repo == "" {
			if defaultRepoErr != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: job %q has no repo and the jobs file is not inside a git repository: %w", spec.Pos, spec.Name, defaultRepoErr))
				continue
			}
			j.Repo = defaultRepo
		} else {
			dir := resolvePath(fileDir, spec.Repo)
			if _, err := os.Stat(dir); err != nil {
				cfg(spec.PosOf("repo"), "repo %s: %v", spec.Repo, pathErr(err))
				continue
			}
			r, err := root(dir)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: repo %s: %w", spec.PosOf("repo"), spec.Repo, err))
				continue
			}
			j.Repo = r
		}
		sha, err := ws.ResolveRef(ctx, j.Repo, j.Base)
		if err != nil {
			cfg(spec.PosOf("base"), "base %q does not name a commit in %s", j.Base, j.Repo)
			continue
		}
		j.BaseCommit = sha

		// Paths.
		if j.UseWorktree {
			j.Branch = "pneuma/" + p.RunID + "/" + j.Slug
			j.Dir = filepath.Join(j.Repo, ".pneuma", "worktrees", p.RunID, j.Slug)
		} else {
			j.Dir = j.Repo
		}

		j.Options = claude.Options{
			Model:              spec.Model,
			PermissionMode:     spec.PermissionMode,
			AllowedTools:       spec.AllowedTools,
			DisallowedTools:    spec.DisallowedTools,
			Tools:              spec.Tools,
			MaxTurns:           spec.MaxTurns,
			MaxBudgetUSD:       spec.MaxBudgetUSD,
			SystemPrompt:       spec.SystemPrompt,
			AppendSystemPrompt: spec.AppendSystemPrompt,
			MCPConfig:          resolveIfFile(fileDir, spec.MCPConfig),
			AddDirs:            resolvePaths(fileDir, spec.AddDirs),
			Settings:           resolveIfFile(fileDir, spec.Settings),
			ExtraArgs:          spec.ExtraArgs,
		}
		if j.Options.PermissionMode == "bypassPermissions" && o.IsRoot && o.Getenv("IS_SANDBOX") == "" && j.Env["IS_SANDBOX"] == "" {
			cfg(spec.PosOf("permission_mode"), "permission_mode bypassPermissions as root: the Claude Code CLI refuses it and exits 1; set IS_SANDBOX=1 (in env: of the job, or in pneuma's environment) when running in a sandbox or container")
		}
		p.Jobs = append(p.Jobs, j)
	}

	if len(cfgProblems) > 0 {
		sort.SliceStable(cfgProblems, func(i, k int) bool { return cfgProblems[i].Pos.Line < cfgProblems[k].Pos.Line })
		return nil, &ConfigError{&DecodeError{Problems: cfgProblems}}
	}
	if len(envErrs) > 0 {
		return nil, &EnvError{errors.Join(envErrs...)}
	}
	if len(p.Jobs) == 0 && p.Shard == nil {
		return nil, &ConfigError{errors.New("no jobs to run after --only")}
	}
	// A hash split can leave a shard empty: that is a run with nothing to do.

	// The run directory lives in the repository holding the jobs file, or in
	// the first job's repository when the file is outside any repository.
	p.OutputDir = o.OutputDir
	if p.OutputDir == "" {
		base := defaultRepo
		if defaultRepoErr != nil && len(p.Jobs) > 0 {
			base = p.Jobs[0].Repo
		} else if defaultRepoErr != nil {
			return nil, &EnvError{fmt.Errorf("the jobs file is not inside a git repository; set --output-dir: %w", defaultRepoErr)}
		}
		p.OutputDir = filepath.Join(base, ".pneuma")
	}
	if abs, err := filepath.Abs(p.OutputDir); err == nil {
		p.OutputDir = abs
	}
	p.RunDir = filepath.Join(p.OutputDir, "runs", p.RunID)
	for _, j := range p.Jobs {
		j.JobDir = filepath.Join(p.RunDir, "jobs", j.Slug)
	}
	return p, nil
}

// DefaultStagger spaces CLI starts: CLIs started at the same instant all
// rewrite ~/.claude.json at once (the CLI's writes of it race at any time, so
// no spacing removes the race; this one spreads the start of a run). It is
// short because every start that comes within it of another waits: with
// uniform jobs, whose ends cluster, 250ms made most jobs wait ~100 ms.
const DefaultStagger = 100 * time.Millisecond

func (d Duration) set() bool { return d != 0 }

func resolvePath(base, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func resolvePaths(base string, ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = resolvePath(base, p)
	}
	return out
}

// resolveIfFile resolves a value that is either inline JSON or a file path.
func resolveIfFile(base, v string) string {
	t := strings.TrimSpace(v)
	if t == "" || strings.HasPrefix(t, "{") {
		return v
	}
	return resolvePath(base, v)
}

func pathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, os.ErrNotExist) {
			return "no such file or directory"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
