package runner

import (
	"context"
	"fmt"
	"strings"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// ResumePlan reloads an earlier run of a jobs file from its journal, to
// continue it with Resume: the plan is the journal's, not the file's as it
// is now; the file gives only the jobs' env (kept out of run.json, as it may
// hold tokens), and o today's CLI and concurrency.
func ResumePlan(ctx context.Context, f *File, o PlanOptions, runID string) (*Plan, *Journal, error) {
	j, err := readRunJournal(ctx, f, o, runID, "--resume")
	if err != nil {
		return nil, nil, err
	}
	p := j.Plan
	p.Binary = o.Binary
	env := map[string]map[string]string{}
	for _, spec := range f.Jobs {
		env[spec.Name] = spec.Env
	}
	for _, job := range p.Jobs {
		job.Env = env[job.Name]
	}
	if o.Concurrency > 0 {
		p.Concurrency = o.Concurrency
	}
	return p, j, nil
}

// RerunPlan plans a new run of the jobs that did not succeed in run runID.
func RerunPlan(ctx context.Context, f *File, o PlanOptions, runID string) (*Plan, error) {
	j, err := readRunJournal(ctx, f, o, runID, "--rerun-failed")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range j.Jobs {
		if s.Result == nil || s.Result.Status != report.StatusSucceeded {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return nil, &ConfigError{Err: fmt.Errorf("--rerun-failed %s: every job of that run succeeded", runID)}
	}
	o.Only = names
	return BuildPlan(ctx, f, o)
}

// readRunJournal reads the journal of run runID of the jobs file f.
func readRunJournal(ctx context.Context, f *File, o PlanOptions, runID, flag string) (*Journal, error) {
	if strings.ContainsAny(runID, `/\`) || runID == "" || runID == "." || runID == ".." {
		return nil, &ConfigError{Err: fmt.Errorf("%s: invalid run id %q", flag, runID)}
	}
	if o.Git == nil {
		o.Git = worktree.New()
	}
	layout, err := RunLayout(ctx, o.Git, f.Path, o.OutputDir)
	if err != nil {
		return nil, err
	}
	j, err := ReadJournal(string(layout.Run(runID)))
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("%s %s: %w", flag, runID, err)}
	}
	return j, nil
}
