package cmd

import "github.com/spf13/cobra"

// NewCmdHistory builds `pneuma history`.
func NewCmdHistory(io *IO) *cobra.Command {
	return &cobra.Command{Use: "history", Short: "Find, export and account for Claude Code sessions"}
}
