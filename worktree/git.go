package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/internal/proc"
	"github.com/pneuma-cli/pneuma/internal/tail"
	"github.com/pneuma-cli/pneuma/internal/text"
)

// stderrTail bounds how much of git's stderr an error carries.
const stderrTail = 2048

// waitDelay is how long a cancelled git gets to clean up its lock files
// after SIGTERM before it is killed.
const waitDelay = 10 * time.Second

// CommandError is a git command that failed. Error reads like
// "git worktree add: exit status 128: fatal: '/x' already exists".
type CommandError struct {
	Args   []string // argv without the binary
	Stderr string   // bounded tail of stderr, trimmed
	Err    error    // usually an *exec.ExitError
}

func (e *CommandError) Error() string {
	msg := "git " + subcommand(e.Args) + ": " + e.Err.Error()
	if e.Stderr != "" {
		msg += ": " + joinMessages(e.Stderr)
	}
	return msg
}

// joinMessages puts git's message lines on one line: a line that starts a
// new message ("fatal: ", "hint: ", ...) after "; ", a wrapped continuation
// after " ". Unlike text.Fold it keeps where one message ends.
func joinMessages(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		l = text.Fold(l)
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			if k, _, ok := strings.Cut(l, ": "); ok && !strings.Contains(k, " ") {
				b.WriteString("; ")
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

func (e *CommandError) Unwrap() error { return e.Err }

// ExitCode is git's exit status, or -1 when it did not exit normally.
func (e *CommandError) ExitCode() int {
	var ee *exec.ExitError
	if errors.As(e.Err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// subcommand names the git command for messages: the first argument after
// the global options, two words for commands with subcommands.
func subcommand(args []string) string {
	i := 0
	for i < len(args) {
		switch {
		case args[i] == "-C" || args[i] == "-c":
			i += 2
			continue
		case strings.HasPrefix(args[i], "-"):
			i++
			continue
		}
		break
	}
	if i >= len(args) {
		return strings.Join(args, " ")
	}
	name := args[i]
	if (name == "worktree" || name == "config") && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
		name += " " + args[i+1]
	}
	return name
}

// repoEnv are variables that point git at a repository. A parent git (pneuma
// run from a hook, for example) exports them; inherited, they would make every
// command act on that repository instead of the directory given with -C.
var repoEnv = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true,
	"GIT_COMMON_DIR": true, "GIT_OBJECT_DIRECTORY": true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_PREFIX": true,
	"GIT_IMPLICIT_WORK_TREE": true, "GIT_NAMESPACE": true,
	"GIT_SHALLOW_FILE": true, "GIT_GRAFT_FILE": true,
}

func (m *Manager) env(extra []string) []string {
	base := os.Environ()
	env := make([]string, 0, len(base)+len(extra)+len(m.Env)+2)
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !repoEnv[k] {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	env = append(env, extra...)
	return append(env, m.Env...)
}

// git returns the git binary to run: Git, or "git", resolved in PATH once.
func (m *Manager) git() string {
	m.gitOnce.Do(func() {
		m.gitPath = m.Git
		if m.gitPath == "" {
			m.gitPath = "git"
		}
		if p, err := exec.LookPath(m.gitPath); err == nil && filepath.IsAbs(p) {
			m.gitPath = p // else each command looks it up and reports its error
		}
	})
	return m.gitPath
}

// run is one git invocation.
type run struct {
	args   []string
	env    []string  // extra environment, before Manager.Env
	stdin  io.Reader // nil: empty
	stdout io.Writer // nil: captured and returned
	// quiet: stdout is not wanted; it shares stderr's pipe (one pipe and
	// one copying goroutine less a command) and ends up in the error's tail.
	quiet bool
}

// output runs git with args and returns its stdout.
func (m *Manager) output(ctx context.Context, args ...string) ([]byte, error) {
	return m.exec(ctx, run{args: args})
}

// quiet runs git with args for its effect alone: what it prints goes to
// the error, if any (git prints nothing on stdout for the commands run so).
func (m *Manager) quiet(ctx context.Context, args ...string) error {
	_, err := m.exec(ctx, run{args: args, quiet: true})
	return err
}

// noAgentCode are the settings every git command pneuma runs starts with: no
// hook runs (git looks for them under /dev/null, which holds none) and no
// file system monitor is asked (core.fsmonitor names a program to run). An
// agent may have written either into the repository's config, its hooks
// directory or its worktree's config.worktree; pneuma's git must never run
// them. Options given with -c win over every config file and reach the git
// processes git starts itself (as GIT_CONFIG_PARAMETERS). The user's hooks
// still run when the user's own git lands the branch.
//
// Filter, diff, merge and textconv drivers are commands too, and `git add
// -A` runs a clean filter on the host. The worktree's .gitattributes is
// the agent's to write, but an attribute only names a driver: the command
// is defined in config alone (the repository's config, read-only inside
// the sandbox whatever its read and write paths say, see sandbox.protect;
// the worktree's config.worktree, which checkLinks compares with what it
// was, and which git reads only when the read-only config enables
// extensions.worktreeConfig). So protecting config suffices, and no -c
// here overrides drivers (it cannot: their names are the agent's choice).
var noAgentCode = []string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor="}

func (m *Manager) exec(ctx context.Context, r run) ([]byte, error) {
	m.spawned.Add(1)
	cmd := exec.CommandContext(ctx, m.git(), append(slices.Clip(noAgentCode), r.args...)...)
	cmd.Env = m.env(r.env)
	cmd.Stdin = r.stdin
	var out bytes.Buffer
	stderr := tail.New(stderrTail)
	switch {
	case r.quiet:
		cmd.Stdout = stderr // the same writer: os/exec gives both one pipe
	case r.stdout != nil:
		cmd.Stdout = r.stdout
	default:
		cmd.Stdout = &out
	}
	cmd.Stderr = stderr
	// Its own group, so a Ctrl-C on the terminal reaches pneuma only (which
	// may still want to commit leftover work); cancellation sends SIGTERM to
	// that group: git removes its lock files and half-made worktrees on
	// SIGTERM, while SIGKILL would leave a stale index.lock behind that
	// blocks every later git command in that repository.
	proc.NewGroup(cmd)
	proc.CancelBy(cmd, syscall.SIGTERM)
	cmd.WaitDelay = waitDelay
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, context.Cause(ctx))
		}
		return out.Bytes(), &CommandError{Args: r.args, Stderr: stderrText(stderr), Err: err}
	}
	return out.Bytes(), nil
}

// stderrText returns the kept end of git's stderr, trimmed, without the
// intermediate states of progress lines (redrawn with '\r'), and with "..."
// in front when its start was cut.
func stderrText(t *tail.Buffer) string {
	lines := strings.Split(t.String(), "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndexByte(l, '\r'); j >= 0 {
			l = l[j+1:]
		}
		lines[i] = l
	}
	s := strings.TrimSpace(strings.Join(lines, "\n"))
	if s == "" {
		return ""
	}
	if t.Dropped() > 0 {
		return "..." + s
	}
	return s
}
