package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// BuildPlan resolves a decoded jobs file into a plan: defaults applied, jobs
// filtered (--only, --shard), prompt files read, repositories and base refs
// checked, names sanitised and checked for collisions. It touches nothing.
// Every problem is reported at once; the error is a *ConfigError or *EnvError.
func BuildPlan(ctx context.Context, f *jobfile.File, o PlanOptions) (*Plan, error) {
	pl, err := newPlanner(ctx, f, o)
	if err != nil {
		return nil, err
	}
	pl.checkOnly()
	for position, spec := range f.Jobs {
		if pl.selected(spec) {
			pl.planJob(position, spec)
		}
	}
	pl.checkSandbox()
	if err := pl.err(); err != nil {
		return nil, err
	}
	if err := pl.placeRunDir(); err != nil {
		return nil, err
	}
	return pl.p, nil
}

// planner builds one plan; its problems are collected, not returned one by one.
type planner struct {
	ctx     context.Context
	f       *jobfile.File
	o       PlanOptions
	git     *worktree.Manager
	p       *Plan
	fileDir string
	only    map[string]bool
	slugs   map[string]string // lower-cased slug -> job name
	rootOf  map[string]string
	// statOf and baseOf check each repository and base once, not once
	// per job: a plan of ten thousand jobs in one repository opens it once.
	statOf   map[string]error
	baseOf   map[[2]string]resolvedBase
	problems []jobfile.Problem
	envErrs  []error
	// defaultRepo holds the jobs file (defaultRepoErr: it is in none).
	defaultRepo    string
	defaultRepoErr error
}

// newPlanner applies the run-level settings and finds the default repository.
func newPlanner(ctx context.Context, f *jobfile.File, o PlanOptions) (*planner, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Git == nil {
		o.Git = worktree.New()
	}
	jobsFile, err := filepath.Abs(f.Path)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("jobs file path: %w", err)}
	}
	pl := &planner{ctx: ctx, f: f, o: o, git: o.Git, fileDir: filepath.Dir(jobsFile),
		only: map[string]bool{}, slugs: map[string]string{}, rootOf: map[string]string{}}
	pl.p = runSettings(f, o, jobsFile)
	pl.defaultRepo, pl.defaultRepoErr = pl.root(pl.fileDir)
	return pl, nil
}

// runSettings is the run-level part of a plan: the file's settings, then
// the options' overrides, then defaults.
func runSettings(f *jobfile.File, o PlanOptions, jobsFile string) *Plan {
	p := &Plan{RunID: o.RunID, JobsFile: jobsFile, Binary: o.Binary,
		Concurrency: f.Concurrency, BudgetUSD: f.BudgetUSD, Stagger: f.Stagger.Std(), Limits: limitsOf(f.Limits),
		Notify: resolveNotify(filepath.Dir(jobsFile), f.Notify)}
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
	} else if f.Stagger == 0 {
		p.Stagger = DefaultStagger
	}
	if o.Shard.Total > 0 {
		p.Shard = &report.Shard{Index: o.Shard.Index, Total: o.Shard.Total}
	}
	return p
}

func (pl *planner) problem(pos jobfile.Pos, format string, args ...any) {
	pl.problems = append(pl.problems, jobfile.Problem{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

// root returns the top level of the repository holding dir, once per dir.
func (pl *planner) root(dir string) (string, error) {
	if r, ok := pl.rootOf[dir]; ok {
		return r, nil
	}
	r, err := pl.git.Root(pl.ctx, dir)
	if err != nil {
		return "", err
	}
	pl.rootOf[dir] = r
	return r, nil
}

// checkOnly checks that every --only name is a job of the file.
func (pl *planner) checkOnly() {
	known := map[string]bool{}
	for _, j := range pl.f.Jobs {
		known[j.Name] = true
	}
	for _, n := range pl.o.Only {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if !known[n] {
			pl.problem(jobfile.Pos{File: pl.f.Path}, "--only: no job named %q%s", n, jobfile.Suggest(n, sortedKeys(known)))
		}
		pl.only[n] = true
	}
}

// selected says whether a job of the file belongs to this plan (--only, --shard).
func (pl *planner) selected(spec jobfile.Job) bool {
	if len(pl.only) > 0 && !pl.only[spec.Name] {
		return false
	}
	return pl.o.Shard.Total == 0 || pl.o.Shard.Contains(spec.Name)
}

// planJob plans one job and adds it to the plan, unless it has a problem
// that leaves nothing to plan.
func (pl *planner) planJob(position int, spec jobfile.Job) {
	j := jobBasics(position, spec)
	// Case-insensitive: macOS file systems and loose refs fold case.
	if prev, ok := pl.slugs[strings.ToLower(j.Slug)]; ok {
		pl.problem(spec.PosOf("name"), "job names %q and %q both become %q as a path and branch name; rename one", prev, spec.Name, j.Slug)
	}
	pl.slugs[strings.ToLower(j.Slug)] = spec.Name
	j.Prompts = pl.prompts(spec)
	if !pl.repository(j, spec) {
		return
	}
	if j.UseWorktree {
		j.Branch = "pneuma/" + pl.p.RunID + "/" + j.Slug
		j.Dir = RepoLayout(j.Repo).Worktree(pl.p.RunID, j.Slug)
	} else {
		j.Dir = j.Repo
	}
	j.Options = cliOptions(spec, pl.fileDir)
	pl.limitOptions(j, spec)
	pl.planSandbox(j, spec)
	if j.Options.PermissionMode == "bypassPermissions" && !j.Sandbox.On() && pl.o.IsRoot && pl.o.Getenv("IS_SANDBOX") == "" && j.Env["IS_SANDBOX"] == "" {
		pl.problem(spec.PosOf("permission_mode"), "permission_mode bypassPermissions as root: the Claude Code CLI refuses it and exits 1; set IS_SANDBOX=1 (in env: of the job, or in pneuma's environment) when running in a sandbox or container")
	}
	pl.p.Jobs = append(pl.p.Jobs, j)
}

// jobBasics copies a job's own settings, with defaults.
func jobBasics(position int, spec jobfile.Job) *Job {
	j := &Job{
		Name: spec.Name, Position: position, Slug: worktree.SanitizeName(spec.Name), Base: spec.Base,
		UseWorktree: spec.Worktree == nil || *spec.Worktree, Commit: spec.Commit == nil || *spec.Commit,
		Env: spec.Env, Timeout: spec.Timeout.Std(), IdleTimeout: spec.IdleTimeout.Std(),
		Retries: spec.Retries, Verify: spec.Verify, Policy: spec.Policy, Publish: publishOf(spec),
		FallbackModel: spec.FallbackModel, Expect: spec.Expect, EnvKeys: envKeys(spec.Env),
	}
	if j.Base == "" {
		j.Base = "HEAD"
	}
	return j
}

// prompts returns a job's prompts: inline, a list, or read from a file.
func (pl *planner) prompts(spec jobfile.Job) []string {
	switch {
	case spec.Prompt != "":
		return []string{spec.Prompt}
	case len(spec.Prompts) > 0:
		return append([]string(nil), spec.Prompts...)
	case spec.PromptFile == "":
		return nil
	}
	data, err := safefile.Read(resolvePath(pl.fileDir, spec.PromptFile), pl.o.Roots, safefile.MaxSize)
	switch {
	case err != nil:
		pl.problem(spec.PosOf("prompt_file"), "prompt_file %s: %v", spec.PromptFile, pathErr(err))
	case strings.TrimSpace(string(data)) == "":
		pl.problem(spec.PosOf("prompt_file"), "prompt_file %s is empty", spec.PromptFile)
	default:
		return []string{string(data)}
	}
	return nil
}

// repository resolves a job's repository and base commit. It returns false
// when there is none to plan the job in.
func (pl *planner) repository(j *Job, spec jobfile.Job) bool {
	if spec.Repo == "" {
		if pl.defaultRepoErr != nil {
			pl.envErrs = append(pl.envErrs, fmt.Errorf("%s: job %q has no repo and the jobs file is not inside a git repository: %w", spec.Pos, spec.Name, pl.defaultRepoErr))
			return false
		}
		j.Repo = pl.defaultRepo
	} else {
		dir := resolvePath(pl.fileDir, spec.Repo)
		if err := pl.stat(dir); err != nil {
			pl.problem(spec.PosOf("repo"), "repo %s: %v", spec.Repo, pathErr(err))
			return false
		}
		r, err := pl.root(dir)
		if err != nil {
			pl.envErrs = append(pl.envErrs, fmt.Errorf("%s: repo %s: %w", spec.PosOf("repo"), spec.Repo, err))
			return false
		}
		j.Repo = r
	}
	sha, err := pl.resolve(j.Repo, j.Base)
	if err != nil {
		pl.problem(spec.PosOf("base"), "base %q does not name a commit in %s", j.Base, j.Repo)
		return false
	}
	j.BaseCommit = sha
	return true
}

// resolvedBase is a base's commit in a repository, or why there is none.
type resolvedBase struct {
	sha string
	err error
}

// stat is os.Stat's error for dir, asked once per plan.
func (pl *planner) stat(dir string) error {
	if err, ok := pl.statOf[dir]; ok {
		return err
	}
	_, err := os.Stat(dir)
	if pl.statOf == nil {
		pl.statOf = map[string]error{}
	}
	pl.statOf[dir] = err
	return err
}

// resolve is the commit base names in repo, resolved once per plan.
func (pl *planner) resolve(repo, base string) (string, error) {
	k := [2]string{repo, base}
	if r, ok := pl.baseOf[k]; ok {
		return r.sha, r.err
	}
	sha, err := pl.git.ResolveRef(pl.ctx, repo, base)
	if pl.baseOf == nil {
		pl.baseOf = map[[2]string]resolvedBase{}
	}
	pl.baseOf[k] = resolvedBase{sha, err}
	return sha, err
}

// cliOptions are the CLI flags of a job, its paths resolved against the
// jobs file's directory.
func cliOptions(spec jobfile.Job, fileDir string) claude.Options {
	return claude.Options{
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
		Agents:             agentsJSON(spec.Agents),
		Agent:              spec.Agent,
		Effort:             spec.Effort,
		PluginDirs:         resolvePaths(fileDir, spec.PluginDirs),
		HookEvents:         spec.IncludeHookEvents,
		ExtraArgs:          spec.ExtraArgs,
	}
}

// agentsJSON is a job's agents as --agents takes them: one JSON object of
// definitions by name ("" for none).
func agentsJSON(agents map[string]jobfile.Agent) string {
	if len(agents) == 0 {
		return ""
	}
	b, err := json.Marshal(agents)
	if err != nil {
		return "" // strings, slices and numbers only: cannot fail
	}
	return string(b)
}

// err is every problem found, as one error: configuration problems first
// (exit 2), then environment ones (exit 3).
func (pl *planner) err() error {
	if len(pl.problems) > 0 {
		sort.SliceStable(pl.problems, func(i, k int) bool { return pl.problems[i].Pos.Line < pl.problems[k].Pos.Line })
		return &ConfigError{&jobfile.DecodeError{Problems: pl.problems}}
	}
	if len(pl.envErrs) > 0 {
		return &EnvError{errors.Join(pl.envErrs...)}
	}
	if len(pl.p.Jobs) == 0 && pl.p.Shard == nil {
		return &ConfigError{errors.New("no jobs to run after --only")}
	}
	return nil // a hash split can leave a shard empty: a run with nothing to do
}

// placeRunDir puts the run directory in the .pneuma of the repository
// holding the jobs file, or of the first job's repository when the file is
// outside any repository, unless --output-dir says where.
func (pl *planner) placeRunDir() error {
	p := pl.p
	layout := Layout{Root: pl.o.OutputDir}
	switch {
	case pl.o.OutputDir != "":
	case pl.defaultRepoErr == nil:
		layout = RepoLayout(pl.defaultRepo)
	case len(p.Jobs) > 0:
		layout = RepoLayout(p.Jobs[0].Repo)
	default:
		return &EnvError{fmt.Errorf("the jobs file is not inside a git repository; set --output-dir: %w", pl.defaultRepoErr)}
	}
	if abs, err := filepath.Abs(layout.Root); err == nil {
		layout.Root = abs
	}
	p.OutputDir = layout.Root
	p.RunDir = string(layout.Run(p.RunID))
	for _, j := range p.Jobs {
		j.JobDir = string(RunDir(p.RunDir).Job(j.Slug))
	}
	return nil
}

// RunLayout is the layout whose runs a jobs file's runs go to: --output-dir
// when set, else the .pneuma of the repository holding the file (of the
// current directory when jobsFile is "").
func RunLayout(ctx context.Context, git *worktree.Manager, jobsFile, outputDir string) (Layout, error) {
	if outputDir != "" {
		return Layout{Root: outputDir}, nil
	}
	dir := "."
	if jobsFile != "" {
		abs, err := filepath.Abs(jobsFile)
		if err != nil {
			return Layout{}, err
		}
		dir = filepath.Dir(abs)
	}
	root, err := git.Root(ctx, dir)
	if err != nil {
		return Layout{}, &EnvError{Err: err}
	}
	return RepoLayout(root), nil
}

// envKeys returns the sorted names of env.
func envKeys(env map[string]string) []string {
	var keys []string
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// limitOptions plans a job's fallback model and output schema.
func (pl *planner) limitOptions(j *Job, spec jobfile.Job) {
	j.FallbackModel = firstNonEmpty(spec.FallbackModel, pl.o.FallbackModel)
	if j.FallbackModel != "" {
		j.Options.ExtraArgs = append(slices.Clip(j.Options.ExtraArgs), "--fallback-model", j.FallbackModel)
	}
	if spec.OutputSchema == "" {
		return
	}
	data := []byte(spec.OutputSchema)
	if !spec.OutputSchema.Inline() {
		var err error
		if data, err = safefile.Read(resolvePath(pl.fileDir, string(spec.OutputSchema)), pl.o.Roots, safefile.MaxSize); err != nil {
			pl.problem(spec.PosOf("output_schema"), "output_schema %s: %v", spec.OutputSchema, pathErr(err))
			return
		}
	}
	if _, err := compileSchema(data); err != nil {
		pl.problem(spec.PosOf("output_schema"), "output_schema: %v", err)
		return
	}
	j.OutputSchema = data
	j.Options.ExtraArgs = append(slices.Clip(j.Options.ExtraArgs), "--json-schema", string(data))
}
