// Package cmd holds pneuma's cobra commands. It turns flags, environment and an
// optional config file into typed settings (one viper instance per invocation),
// wires the core packages together and maps errors to exit codes. Nothing below
// cmd exits the process or writes to os.Stdout.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pneuma-cli/pneuma/sandbox"
)

// Exit codes, documented in `pneuma run --help` and the README.
const (
	ExitOK          = 0
	ExitFailed      = 1
	ExitUsage       = 2
	ExitEnvironment = 3
	ExitInterrupted = 130
)

// IO is the set of streams a command reads and writes; tests swap them.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// IsTTY reports whether ErrOut is an interactive terminal (progress bar).
	IsTTY bool
	// TermSize, when set, reports ErrOut's terminal size in columns and
	// rows (the live view); unset or failing, 80×24 is assumed.
	TermSize func() (cols, rows int, err error)
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
}

// SystemIO returns the process's own streams.
func SystemIO() *IO {
	return &IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, IsTTY: isTerminal(os.Stderr), Getenv: os.Getenv,
		TermSize: func() (int, int, error) { return term.GetSize(int(os.Stderr.Fd())) }}
}

// Main runs pneuma with os.Args and returns the process exit code.
func Main() int {
	if code, ok := sandbox.RunForwarder(os.Args[1:], sandbox.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}); ok {
		return code // pneuma's binary is also the forwarder inside a job's sandbox
	}
	ctx, stop := signalContext(context.Background(), os.Stderr)
	defer stop()
	return Execute(ctx, SystemIO(), os.Args[1:])
}

// Execute runs one invocation of pneuma with args and returns its exit code.
func Execute(ctx context.Context, io *IO, args []string) int {
	if err := platformError(runtime.GOOS); err != nil {
		fmt.Fprintf(io.ErrOut, "pneuma: %v\n", err)
		return ExitEnvironment
	}
	root := NewRootCmd(io)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	code := ExitCode(err)
	var silent *SilentError
	if errors.As(err, &silent) {
		return code
	}
	// Under --json stdout carries JSON only: the error is an event there,
	// and the plain message still goes to stderr for whoever reads the log.
	if jsonOutput(c) {
		if werr := writeErrorEvent(io.Out, err, code, time.Now()); werr != nil {
			fmt.Fprintf(io.ErrOut, "pneuma: write error event: %v\n", werr)
		}
	}
	fmt.Fprintf(io.ErrOut, "pneuma: %v\n", err)
	return code
}

// NewRootCmd builds the command tree.
func NewRootCmd(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:           "pneuma",
		Short:         "Run Claude Code headlessly at scale, and account for what it did",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentBuild().Version,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &UsageError{Err: err, Usage: c.UsageString()}
	})
	root.AddCommand(
		NewCmdRun(io, nil),
		NewCmdStatus(io),
		NewCmdLogs(io),
		NewCmdHistory(io),
		NewCmdReport(io),
		NewCmdClean(io),
		NewCmdServe(io, nil),
		NewCmdSchema(io),
		NewCmdVersion(io),
	)
	registerCompletions(root, io)
	return root
}

// Version is set at build time with -ldflags "-X .../cmd.Version=...".
var Version = "dev"
