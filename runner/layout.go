package runner

import (
	"os"
	"path/filepath"
)

// Layout owns every path under a .pneuma directory: worktrees, the pool of
// spares, runs and their jobs, and the server's state. Nothing else in pneuma
// joins these names; docs/architecture.md draws the tree.
type Layout struct {
	// Root is the .pneuma directory itself.
	Root string
}

// RepoLayout is the layout of repo's own .pneuma directory, where its
// worktrees and spares live (and, by default, the runs of a jobs file in it).
func RepoLayout(repo string) Layout { return Layout{Root: filepath.Join(repo, ".pneuma")} }

// ExcludePattern is the line added to a repository's info/exclude so that
// git never sees the .pneuma directory.
const ExcludePattern = "/.pneuma/"

// Worktrees is the directory holding the worktrees of one run.
func (l Layout) Worktrees(runID string) string { return filepath.Join(l.Root, "worktrees", runID) }

// Worktree is the linked worktree of one job of a run.
func (l Layout) Worktree(runID, slug string) string { return filepath.Join(l.Worktrees(runID), slug) }

// WorktreesRoot is the directory holding every run's worktrees.
func (l Layout) WorktreesRoot() string { return filepath.Join(l.Root, "worktrees") }

// Pool is where clean spare worktrees wait for the next run.
func (l Layout) Pool() string { return filepath.Join(l.Root, "pool") }

// Spares lists the spare worktrees in the pool.
func (l Layout) Spares() []string {
	entries, _ := os.ReadDir(l.Pool())
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(l.Pool(), e.Name()))
		}
	}
	return dirs
}

// Runs is the directory holding every run's directory.
func (l Layout) Runs() string { return filepath.Join(l.Root, "runs") }

// Run is the directory of one run.
func (l Layout) Run(runID string) RunDir { return RunDir(filepath.Join(l.Runs(), runID)) }

// Serve is the server's default state directory.
func (l Layout) Serve() string { return filepath.Join(l.Root, "serve") }

// RunDir is a run's directory: its journal, reports and one directory per job.
type RunDir string

// Journal is run.json: the plan and every job's state, written atomically
// at the start and the end of a run.
func (d RunDir) Journal() string { return filepath.Join(string(d), "run.json") }

// JournalLog is journal.jsonl: each job's state after each change during a
// run, one JSON line, replayed onto run.json when the run is resumed.
func (d RunDir) JournalLog() string { return filepath.Join(string(d), "journal.jsonl") }

// Results is results.jsonl: during a run, each finished job's report entry,
// so that memory does not hold them (removed when report.json is written).
func (d RunDir) Results() string { return filepath.Join(string(d), "results.jsonl") }

// Report is report.json (schema pneuma.report/v1).
func (d RunDir) Report() string { return filepath.Join(string(d), "report.json") }

// Job is the directory of one job of the run.
func (d RunDir) Job(slug string) JobDir { return JobDir(filepath.Join(string(d), "jobs", slug)) }

// JobDir is a job's (or a server session's) directory of records.
type JobDir string

// Stream is the CLI's stdout, verbatim.
func (d JobDir) Stream() string { return filepath.Join(string(d), "stream.jsonl") }

// Stderr is the CLI's bounded stderr.
func (d JobDir) Stderr() string { return filepath.Join(string(d), "stderr.log") }

// Audit is the log of tool calls and the decisions on them.
func (d JobDir) Audit() string { return filepath.Join(string(d), "audit.jsonl") }

// Patch is the diff of the job's branch against its base.
func (d JobDir) Patch() string { return filepath.Join(string(d), "diff.patch") }

// Output is where a job's validated structured output is written.
func (d JobDir) Output() string { return filepath.Join(string(d), "output.json") }

// Transcript is the directory holding the archived session transcript.
func (d JobDir) Transcript() string { return filepath.Join(string(d), "transcript") }

// StateDir is the server's state directory (default .pneuma/serve).
type StateDir string

// Sessions is the directory holding every session's directory.
func (d StateDir) Sessions() string { return filepath.Join(string(d), "sessions") }

// Session is the directory of one server session: its records are those of a
// job (stream, stderr, audit, patch, transcript) plus session.json and the
// event log.
func (d StateDir) Session(id string) JobDir { return JobDir(filepath.Join(d.Sessions(), id)) }

// Runs is where runs started through the server keep their own state.
func (d StateDir) Runs() string { return filepath.Join(string(d), "runs") }

// SessionFile is a server session's session.json.
func (d JobDir) SessionFile() string { return filepath.Join(string(d), "session.json") }

// Events is a run's or a session's event log (events.jsonl).
func (d JobDir) Events() string { return filepath.Join(string(d), "events.jsonl") }

// Events is the run's events.jsonl: every event of the run with its seq
// (pneuma run, and runs started through pneuma serve).
func (d RunDir) Events() string { return filepath.Join(string(d), "events.jsonl") }
