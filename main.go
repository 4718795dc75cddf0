// Command pneuma runs Claude Code headlessly at scale: many jobs at once, each in
// its own git worktree, with reports CI can read. It also reads Claude Code's own
// session history to export transcripts and account for usage.
package main

import (
	"os"

	"github.com/pneuma-cli/pneuma/cmd"
)

func main() {
	os.Exit(cmd.Main())
}
