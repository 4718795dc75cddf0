package cmd

import "github.com/spf13/cobra"

// NewCmdRun builds `pneuma run`. (skeleton; replaced by the real command)
func NewCmdRun(io *IO, runF func() error) *cobra.Command {
	return &cobra.Command{Use: "run JOBS.yaml", Short: "Run Claude Code jobs concurrently in git worktrees"}
}

func exitCodeOf(err error) int { return ExitFailed }
