package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/worktree"
)

const cleanLong = `Remove the spare worktrees that pneuma run keeps in .pneuma/pool of a
repository (by default as many as the run's concurrency: the next run reuses
them instead of checking out, and later deleting, a whole tree per job slot).
Job branches and kept job worktrees are not touched. A spare with uncommitted
changes is left alone and named.

EXIT STATUS
  0    every spare was removed (or there was none)
  3    a spare could not be removed, or a directory is not in a git repository`

// NewCmdClean builds `pneuma clean`.
func NewCmdClean(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "clean [REPO...]",
		Short: "Remove the spare worktrees pneuma keeps for its next run",
		Long:  cleanLong,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"."}
			}
			return runClean(c.Context(), io, args)
		},
	}
}

func runClean(ctx context.Context, io *IO, dirs []string) error {
	git := worktree.New()
	var errs []error
	for _, dir := range dirs {
		repo, err := git.Root(ctx, dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := runner.Clean(ctx, git, repo)
		if err != nil {
			errs = append(errs, err)
		}
		fmt.Fprintln(io.Out, c)
	}
	if err := errors.Join(errs...); err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	return nil
}

// pooled counts the spare worktrees waiting in the pools of plan's repositories.
func pooled(plan *runner.Plan) int {
	n := 0
	seen := map[string]bool{}
	for _, job := range plan.Jobs {
		if seen[job.Repo] {
			continue
		}
		seen[job.Repo] = true
		n += len(runner.RepoLayout(job.Repo).Spares())
	}
	return n
}
