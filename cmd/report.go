package cmd

import "github.com/spf13/cobra"

// NewCmdReport builds `pneuma report`.
func NewCmdReport(io *IO) *cobra.Command {
	return &cobra.Command{Use: "report", Short: "Work with pneuma run reports"}
}
