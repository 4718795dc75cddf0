package cmd

import (
	"context"
	"errors"
	"fmt"
)

// UsageError is a command-line mistake: exit 2, with the usage text.
type UsageError struct {
	Err   error
	Usage string
}

func (e *UsageError) Error() string {
	if e.Usage == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v\n\n%s", e.Err, e.Usage)
}

func (e *UsageError) Unwrap() error { return e.Err }

// ExitError carries an explicit exit code for an error already reported.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// SilentError is an outcome that was already reported to the user (for example
// failed jobs shown in the final table): it sets the exit code without printing.
type SilentError struct{ Code int }

func (e *SilentError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ExitCode maps an error to pneuma's exit code. It is the one place that does.
func ExitCode(err error) int {
	var (
		silent *SilentError
		exit   *ExitError
		usage  *UsageError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &usage):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	}
	return exitCodeOf(err)
}
