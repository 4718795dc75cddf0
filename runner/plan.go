package runner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/safefile"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/policy"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/sandbox"
	"github.com/pneuma-cli/pneuma/worktree"
)

// ConfigError is a mistake in the jobs file or the options (exit 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// EnvError is a problem with the machine rather than the input: not a git
// repository, no CLI, a worktree that cannot be created (exit 3).
type EnvError struct{ Err error }

func (e *EnvError) Error() string { return e.Err.Error() }
func (e *EnvError) Unwrap() error { return e.Err }

// KeepPolicy says when a job's worktree stays after the job.
type KeepPolicy string

// Keep policies.
const (
	KeepAlways    KeepPolicy = "always"
	KeepOnFailure KeepPolicy = "on-failure"
	KeepNever     KeepPolicy = "never"
)

// ParseKeepPolicy checks a --keep-worktrees value.
func ParseKeepPolicy(s string) (KeepPolicy, error) {
	switch KeepPolicy(s) {
	case KeepAlways, KeepOnFailure, KeepNever:
		return KeepPolicy(s), nil
	}
	return "", fmt.Errorf("keep-worktrees must be always, on-failure or never, not %q", s)
}

// PlanOptions are the run-level settings that shape the plan.
type PlanOptions struct {
	// Concurrency overrides the file's (0: use the file's, else the CPUs).
	Concurrency int
	// Only keeps the named jobs.
	Only []string
	// Shard keeps the jobs of one shard (zero value: all jobs).
	Shard Shard
	// OutputDir is the run directory root (default <repo of jobs file>/.pneuma).
	OutputDir string
	// RunID names the run (default: generated).
	RunID string
	// BudgetUSD overrides the file's run-wide budget when positive.
	BudgetUSD float64
	// Stagger overrides the file's start spacing when non-negative.
	Stagger time.Duration
	// FallbackModel is the fallback model of jobs that set none.
	FallbackModel string
	// Binary is the claude CLI the jobs run.
	Binary string
	// Getenv reads pneuma's environment (for the root/IS_SANDBOX check).
	Getenv func(string) string
	// IsRoot reports whether pneuma runs as root.
	IsRoot bool
	// Git resolves repositories and refs (default worktree.New()).
	Git *worktree.Manager
	// Roots, when set, are the directories the files a job names
	// (prompt_file, output_schema) must be under (pneuma serve's --root).
	// Those files are read with internal/safefile either way: regular
	// files of at most safefile.MaxSize bytes.
	Roots []string
	// Sandbox runs every job in a sandbox (--sandbox), whatever the file says.
	Sandbox bool
}

// Plan is everything a run will do, decided before anything starts.
type Plan struct {
	RunID       string        `json:"run_id"`
	JobsFile    string        `json:"jobs_file"`
	OutputDir   string        `json:"output_dir"`
	RunDir      string        `json:"run_dir"`
	Binary      string        `json:"claude"`
	Concurrency int           `json:"concurrency"`
	BudgetUSD   float64       `json:"budget_usd,omitempty"`
	Stagger     time.Duration `json:"stagger"`
	Shard       *report.Shard `json:"shard,omitempty"`
	Limits      Limits        `json:"limits"`
	// Notify are the jobs file's notification targets, secret files resolved.
	Notify []jobfile.Notify `json:"notify,omitempty"`
	Jobs   []*Job           `json:"jobs"`
}

// Job is one planned job with defaults applied and every path resolved.
type Job struct {
	Name string `json:"name"`
	// Position is the job's index in the jobs file, before --only and --shard.
	Position    int            `json:"position"`
	Slug        string         `json:"slug"`
	Prompts     []string       `json:"prompts"`
	Repo        string         `json:"repo"`
	Base        string         `json:"base"`
	BaseCommit  string         `json:"base_commit"`
	Branch      string         `json:"branch,omitempty"`
	Dir         string         `json:"dir"`
	UseWorktree bool           `json:"use_worktree"`
	Commit      bool           `json:"commit"`
	Options     claude.Options `json:"options"`
	// Env is not written to run.json (it may hold tokens); a resumed run
	// takes it from the jobs file again.
	Env map[string]string `json:"-"`
	// EnvKeys names the variables of Env, so that a run resumed without
	// its jobs file can say which jobs lost theirs.
	EnvKeys     []string        `json:"env_keys,omitempty"`
	Timeout     time.Duration   `json:"timeout,omitempty"`
	IdleTimeout time.Duration   `json:"idle_timeout,omitempty"`
	Retries     int             `json:"retries,omitempty"`
	Verify      *jobfile.Verify `json:"verify,omitempty"`
	Policy      *policy.Spec    `json:"policy,omitempty"`
	// Publish says where the job's branch goes when it succeeds with changes.
	Publish *Publish `json:"publish,omitempty"`
	// JobDir is the job's folder in the run directory.
	JobDir string `json:"job_dir"`
	// FallbackModel is passed as --fallback-model (in Options.ExtraArgs)
	// and named in the report.
	FallbackModel string `json:"fallback_model,omitempty"`
	// Expect lists what the job must show besides a success result.
	Expect *jobfile.Expect `json:"expect,omitempty"`
	// OutputSchema is the JSON Schema its structured output must match
	// (passed as --json-schema in Options.ExtraArgs).
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// ForkFrom is the CLI session a server session forks (resume with
	// fork_session): the attempt resuming it passes --fork-session, later
	// ones continue the fork.
	ForkFrom string `json:"fork_from,omitempty"`
	// Binary overrides the plan's CLI for this job (empty: the plan's).
	Binary string `json:"claude,omitempty"`
	// Sandbox confines the job's CLI and verify commands (nil or not
	// Enabled: no sandbox); its read and write paths are absolute.
	Sandbox *sandbox.Spec `json:"sandbox,omitempty"`
}

// Args returns the CLI argv (without the binary) of the job's first attempt.
func (j *Job) Args() []string { return j.Options.Args() }

// NewRunID returns a sortable, unique run id: 20261122-134501-3fa9.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (it panics if the kernel cannot give randomness)
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// DefaultStagger spaces the CLI starts of a wave (the run's first start of
// each slot, and the starts after a usage-limit hold), which would
// otherwise all rewrite ~/.claude.json at the same instant. Later starts are
// not spaced (spaceStart). docs/limits.md has the measurements.
const DefaultStagger = 100 * time.Millisecond

func resolvePath(base, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[2:])
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

func resolvePaths(base string, ps []string) []string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = resolvePath(base, p)
	}
	return out
}

// resolveIfFile resolves a value that is either inline JSON or a file path.
func resolveIfFile(base, v string) string {
	t := strings.TrimSpace(v)
	if t == "" || strings.HasPrefix(t, "{") {
		return v
	}
	return resolvePath(base, v)
}

func pathErr(err error) string {
	var oe *safefile.OutsideError
	if errors.As(err, &oe) {
		return "not under any root"
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		if errors.Is(err, os.ErrNotExist) {
			return "no such file or directory"
		}
		if errors.Is(err, safefile.ErrNotRegular) {
			return "not a regular file"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ResolvePath resolves a path a jobs file or a session request names the
// way the plan does: "~/" is the home directory, a relative path is under
// base.
func ResolvePath(base, p string) string { return resolvePath(base, p) }
