package cmd

import (
	"errors"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/worktree"
)

// exitCodeOf maps the core packages' typed errors to exit codes.
func exitCodeOf(err error) int {
	var (
		decode  *jobfile.DecodeError
		config  *runner.ConfigError
		env     *runner.EnvError
		notRepo *worktree.NotRepoError
	)
	switch {
	case errors.As(err, &decode), errors.As(err, &config):
		return ExitUsage
	case errors.As(err, &env), errors.As(err, &notRepo), errors.Is(err, claude.ErrNotFound):
		return ExitEnvironment
	}
	return ExitFailed
}
