package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/worktree"
)

// ResumePlan reloads an earlier run from its journal, to continue it with
// Resume: the plan is the journal's, not the jobs file's as it is now. f is
// that file, or nil to find the run by id alone (in --output-dir, else in
// the .pneuma of the current directory's repository). The file gives only
// the jobs' env (kept out of run.json, as it may hold tokens), and o
// today's CLI and concurrency. The warnings say how the file differs from
// the plan, or which jobs lose their env without it.
func ResumePlan(ctx context.Context, f *jobfile.File, o PlanOptions, runID string) (*Plan, *Journal, []string, error) {
	j, err := readRunJournal(ctx, f, o, runID, "--resume")
	if err != nil {
		return nil, nil, nil, err
	}
	p := j.Plan
	p.Binary = o.Binary
	if o.Concurrency > 0 {
		p.Concurrency = o.Concurrency
	}
	if f == nil {
		return p, j, envLost(p), nil
	}
	env := map[string]map[string]string{}
	for _, spec := range f.Jobs {
		env[spec.Name] = spec.Env
	}
	for _, job := range p.Jobs {
		job.Env = env[job.Name]
	}
	return p, j, fileDrift(ctx, f, o, p), nil
}

// envLost warns, for a run resumed without its jobs file, about the jobs
// whose env run.json does not hold.
func envLost(p *Plan) []string {
	var jobs []string
	for _, job := range p.Jobs {
		if len(job.EnvKeys) > 0 {
			jobs = append(jobs, fmt.Sprintf("%s (%s)", job.Name, strings.Join(job.EnvKeys, ", ")))
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("run.json does not keep env (it may hold secrets), so without the jobs file these jobs run without theirs: %s; give the jobs file to pass it",
		strings.Join(jobs, "; "))}
}

// fileDrift compares the jobs file as it is now with the plan of the run
// being resumed, which is what runs.
func fileDrift(ctx context.Context, f *jobfile.File, o PlanOptions, p *Plan) []string {
	o.RunID = p.RunID
	now, err := BuildPlan(ctx, f, o)
	if err != nil {
		return []string{fmt.Sprintf("%s no longer plans (%v); run %s goes on from its journal", f.Path, firstLine(err.Error()), p.RunID)}
	}
	d := diffPlans(p, now)
	if d == "" {
		return nil
	}
	return []string{fmt.Sprintf("%s changed since run %s (%s); the run goes on with the jobs and prompts it started with", f.Path, p.RunID, d)}
}

// diffPlans says which jobs was lacks, which now lacks, and which have
// other prompts; "" when none.
func diffPlans(was, now *Plan) string {
	old := map[string]*Job{}
	for _, j := range was.Jobs {
		old[j.Name] = j
	}
	var added, changed []string
	for _, j := range now.Jobs {
		o, ok := old[j.Name]
		switch {
		case !ok:
			added = append(added, j.Name)
		case !slices.Equal(o.Prompts, j.Prompts):
			changed = append(changed, j.Name)
		}
		delete(old, j.Name)
	}
	var removed []string
	for _, j := range was.Jobs {
		if _, ok := old[j.Name]; ok {
			removed = append(removed, j.Name)
		}
	}
	var parts []string
	for _, d := range []struct {
		what  string
		names []string
	}{{"jobs added", added}, {"jobs removed", removed}, {"prompt changed", changed}} {
		if len(d.names) > 0 {
			parts = append(parts, d.what+": "+strings.Join(d.names, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// RerunPlan plans a new run of the jobs that did not succeed in run runID.
func RerunPlan(ctx context.Context, f *jobfile.File, o PlanOptions, runID string) (*Plan, error) {
	dir, err := runDirOf(ctx, f, o, runID, "--rerun-failed")
	if err != nil {
		return nil, err
	}
	// Only the names and statuses: a run of ten thousand jobs is not
	// read into memory to rerun a hundred.
	names, err := unsucceeded(dir)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("--rerun-failed %s: %w", runID, err)}
	}
	if len(names) == 0 {
		return nil, &ConfigError{Err: fmt.Errorf("--rerun-failed %s: every job of that run succeeded", runID)}
	}
	o.Only = names
	return BuildPlan(ctx, f, o)
}

// readRunJournal reads the journal of run runID of the jobs file f (nil:
// of the current directory's repository).
func readRunJournal(ctx context.Context, f *jobfile.File, o PlanOptions, runID, flag string) (*Journal, error) {
	dir, err := runDirOf(ctx, f, o, runID, flag)
	if err != nil {
		return nil, err
	}
	j, err := readJournal(dir, true) // the results go on as read, not decoded
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("%s %s: %w", flag, runID, err)}
	}
	return j, nil
}

// runDirOf is the directory of run runID of the jobs file f (nil: of the
// current directory's repository).
func runDirOf(ctx context.Context, f *jobfile.File, o PlanOptions, runID, flag string) (string, error) {
	if strings.ContainsAny(runID, `/\`) || runID == "" || runID == "." || runID == ".." {
		return "", &ConfigError{Err: fmt.Errorf("%s: invalid run id %q", flag, runID)}
	}
	if o.Git == nil {
		o.Git = worktree.New()
	}
	path := ""
	if f != nil {
		path = f.Path
	}
	layout, err := RunLayout(ctx, o.Git, path, o.OutputDir)
	if err != nil {
		return "", err
	}
	return string(layout.Run(runID)), nil
}
