package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/internal/proc"
	"github.com/pneuma-cli/pneuma/internal/redact"
	"github.com/pneuma-cli/pneuma/internal/tail"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// Verification defaults.
const verifyOutputLimit = 8 << 10

// runVerify runs the verification command once in dir: argv only, its own
// process group (killed whole on timeout), combined output kept as a bounded
// tail.
func runVerify(ctx context.Context, v *jobfile.Verify, dir string, env []string, round int) report.VerifyRound {
	res := report.VerifyRound{Round: round, Command: v.Command, ExitCode: -1}
	ctx, cancel := context.WithTimeout(ctx, v.RunTimeout())
	defer cancel()
	start := time.Now()
	out := tail.New(verifyOutputLimit)
	argv := v.Command
	if box := boxOf(ctx); box != nil { // the job's sandbox holds its verify command too
		argv, env = box.Command(dir, argv), box.Env(env)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout = out
	cmd.Stderr = out
	proc.NewGroup(cmd)
	proc.CancelBy(cmd, syscall.SIGKILL)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	boxOf(ctx).SyncRefs() // commits the command made inside reach the job's branch
	res.DurationMS = time.Since(start).Milliseconds()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
		res.Passed = true
	case ctx.Err() == context.DeadlineExceeded:
		res.TimedOut = true
		fmt.Fprintf(out, "\n[pneuma: killed after the verify timeout of %s]\n", v.RunTimeout())
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		fmt.Fprintf(out, "[pneuma: could not run %s: %v]\n", v.Command[0], err)
	}
	if cmd.Process != nil {
		// Anything the command left running in its group goes with it. An
		// error here can only be a group already gone (not an error to
		// proc.Signal) or a permission the child cannot have revoked.
		_ = proc.Signal(cmd.Process, syscall.SIGKILL)
	}
	res.Output = redact.String(verifyOutput(out))
	return res
}

// verifyFollowUp is the prompt that sends a failed verification back to the agent.
func verifyFollowUp(r report.VerifyRound) string {
	var b strings.Builder
	what := fmt.Sprintf("exited with code %d", r.ExitCode)
	if r.TimedOut {
		what = "timed out"
	}
	fmt.Fprintf(&b, "The verification command `%s` %s. Its output (the end of it):\n\n```\n%s\n```\n\n",
		strings.Join(r.Command, " "), what, strings.TrimRight(r.Output, "\n"))
	b.WriteString("Fix what makes it fail, then stop; it will be run again.")
	return b.String()
}

// verifyOutput is the kept end of the command's output, after a note of how
// much came before it.
func verifyOutput(t *tail.Buffer) string {
	if n := t.Dropped(); n > 0 {
		return fmt.Sprintf("[… %d bytes before this …]\n", n) + t.String()
	}
	return t.String()
}
