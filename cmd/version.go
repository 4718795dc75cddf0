package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Commit and Date are set at build time, like Version (.goreleaser.yaml):
// -ldflags "-X github.com/pneuma-cli/pneuma/cmd.Commit=... -X .../cmd.Date=...".
var (
	Commit = ""
	Date   = ""
)

// BuildInfo says which pneuma this is.
type BuildInfo struct {
	Version  string
	Commit   string
	Date     string
	Modified bool
}

// currentBuild is what the linker set, filled in from the binary's own build
// information when it set nothing: `go install ...@v1.2.3` records the
// module version, and a build in a git checkout records the commit and its
// time.
func currentBuild() BuildInfo {
	b := BuildInfo{Version: Version, Commit: Commit, Date: Date}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.time":
			if b.Date == "" {
				b.Date = s.Value
			}
		case "vcs.modified":
			b.Modified = s.Value == "true" && Commit == ""
		}
	}
	return b
}

// NewCmdVersion builds `pneuma version`.
func NewCmdVersion(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print pneuma's version, commit and build date",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			b := currentBuild()
			commit, date := orUnknown(b.Commit), orUnknown(b.Date)
			if b.Modified {
				commit += " (modified)"
			}
			_, err := fmt.Fprintf(io.Out, "pneuma %s\ncommit %s\nbuilt  %s\ngo     %s %s/%s\n",
				b.Version, commit, date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
