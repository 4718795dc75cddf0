package cmd

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/live"
	"github.com/pneuma-cli/pneuma/runner"
)

// LogsOptions are the settings of `pneuma logs`.
type LogsOptions struct {
	Run      string
	Job      string
	Follow   bool
	Raw      bool
	StateDir string
}

const logsLong = `Print a job's stream (stream.jsonl) for a person: the assistant's text, each tool
call with a short, redacted input and its result shortened, API retries, and the
result with its cost. Without JOB, every job's lines, each prefixed with its name
in a stable colour. -f follows the run until it ends, as kubectl logs -f does;
Ctrl-C stops following, not the run. --raw prints stream.jsonl as it is.

RUN is a run id (in the current repository's .pneuma/runs or --state-dir's runs)
or a run directory's path.`

// NewCmdLogs builds `pneuma logs`.
func NewCmdLogs(io *IO) *cobra.Command {
	o := &LogsOptions{}
	c := &cobra.Command{
		Use:   "logs RUN [JOB]",
		Short: "Print or follow what a run's jobs say",
		Long:  logsLong,
		Example: `  pneuma logs 20261122-134501-3fa9
  pneuma logs -f 20261122-134501-3fa9 lint
  pneuma logs --raw 20261122-134501-3fa9 lint | jq .`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return &UsageError{Err: fmt.Errorf("logs takes a run id and optionally a job, got %d arguments", len(args)), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Run = args[0]
			if len(args) == 2 {
				o.Job = args[1]
			}
			return runLogs(c.Context(), io, o)
		},
	}
	f := c.Flags()
	f.BoolVarP(&o.Follow, "follow", "f", false, "follow the run's streams until it ends")
	f.BoolVar(&o.Raw, "raw", false, "print stream.jsonl as it is")
	f.StringVar(&o.StateDir, "state-dir", "", "a server's state directory to look for RUN in")
	return c
}

// jobLog is one job's stream being read.
type jobLog struct {
	name     string
	worktree string
	tail     *live.Tail
	prefix   string
	// audit follows the job's audit.jsonl: pneuma's decision on each tool
	// call, shown with the call's result.
	audit   *live.Tail
	decided map[string]string
}

// decision is pneuma's decision on a tool call, read from the job's audit
// when asked: the audit line is written just after the stream's result
// line, so a result not yet in it reads the audit again.
func (jl *jobLog) decision(toolUseID string) string {
	if d, ok := jl.decided[toolUseID]; ok {
		return d
	}
	_ = jl.audit.Read(func(line []byte) { // a decision not shown is all an error costs
		if id, d, ok := live.AuditDecision(line); ok {
			jl.decided[id] = d
		}
	})
	return jl.decided[toolUseID]
}

// streamLineMax is the longest stream line logs renders (the CLI's own
// limit, docs/claude-cli.md); --raw prints longer ones too.
const streamLineMax = 64 << 20

func runLogs(ctx context.Context, io *IO, o *LogsOptions) error {
	dir, err := findRun(ctx, o.Run, o.StateDir)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	names := jobNames(dir)
	if o.Job != "" {
		if _, ok := names[o.Job]; !ok {
			return &ExitError{Code: ExitUsage, Err: fmt.Errorf("run %s has no job %q", filepath.Base(string(dir)), o.Job)}
		}
	}
	if o.Follow {
		setStopNotice(ctx, "stopped following; the run goes on", "stopped following; the run goes on")
	}
	color := io.IsTTY && io.Getenv("NO_COLOR") == ""
	logs := map[string]*jobLog{}
	for {
		ended := runEnded(dir)
		for _, jl := range openJobLogs(dir, names, o.Job, logs, color) {
			if err := printJobLog(io, jl, o.Raw); err != nil {
				return err
			}
		}
		if !o.Follow || ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(statusPoll):
		}
		names = jobNames(dir) // a resumed or later job
	}
}

// openJobLogs are the job logs to read, in name order, opening those
// whose directory now exists.
func openJobLogs(dir runner.RunDir, names map[string]jobInfo, only string, logs map[string]*jobLog, color bool) []*jobLog {
	var order []string
	for name := range names {
		if only == "" || name == only {
			order = append(order, name)
		}
	}
	sort.Strings(order)
	out := make([]*jobLog, 0, len(order))
	for _, name := range order {
		jl := logs[name]
		if jl == nil {
			info := names[name]
			jl = &jobLog{name: name, worktree: info.worktree, tail: live.NewTail(info.stream, streamLineMax),
				audit: live.NewTail(info.audit, streamLineMax), decided: map[string]string{}}
			if only == "" {
				jl.prefix = jobPrefix(name, color)
			}
			logs[name] = jl
		}
		out = append(out, jl)
	}
	return out
}

// printJobLog prints what a job's stream has new.
func printJobLog(io *IO, jl *jobLog, raw bool) error {
	return jl.tail.Read(func(line []byte) {
		if raw {
			fmt.Fprintf(io.Out, "%s%s\n", jl.prefix, line)
			return
		}
		for _, l := range live.StreamLines(line, jl.worktree, jl.decision) {
			fmt.Fprintf(io.Out, "%s%s\n", jl.prefix, l)
		}
	})
}

// jobInfo is where a job keeps its records and worktree.
type jobInfo struct{ stream, audit, worktree string }

// jobNames are the run's jobs by name: from its journal's plan, else its
// jobs directories (a name is then its slug).
func jobNames(dir runner.RunDir) map[string]jobInfo {
	names := map[string]jobInfo{}
	if j, err := runner.ReadJournal(string(dir)); err == nil && j.Plan != nil {
		for _, job := range j.Plan.Jobs {
			jobDir := runner.JobDir(job.JobDir)
			if job.JobDir == "" {
				jobDir = dir.Job(job.Slug)
			}
			names[job.Name] = jobInfo{stream: jobDir.Stream(), audit: jobDir.Audit(), worktree: job.Dir}
		}
		return names
	}
	ents, _ := os.ReadDir(filepath.Join(string(dir), "jobs")) // none yet: no jobs
	for _, de := range ents {
		if de.IsDir() {
			names[de.Name()] = jobInfo{stream: dir.Job(de.Name()).Stream(), audit: dir.Job(de.Name()).Audit()}
		}
	}
	return names
}

// runEnded says whether a run has ended: its report is written, or its
// journal is not running.
func runEnded(dir runner.RunDir) bool {
	if _, err := os.Stat(dir.Report()); err == nil {
		return true
	}
	j, err := runner.ReadJournal(string(dir))
	return err == nil && j.Status != "" && j.Status != runner.StateRunning
}

// prefixColours are the stable colours of job names (docker compose logs).
var prefixColours = []string{"\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[35m", "\x1b[34m", "\x1b[96m"}

// jobPrefix is "name | ", coloured by a hash of the name.
func jobPrefix(name string, color bool) string {
	if !color {
		return name + " | "
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return prefixColours[h.Sum32()%uint32(len(prefixColours))] + name + " |\x1b[0m "
}
