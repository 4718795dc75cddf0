package cmd

import (
	"context"
	"errors"
	"fmt"
	stdio "io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/sandbox"
	"github.com/pneuma-cli/pneuma/worktree"
)

// RunOptions are the typed settings of `pneuma run`, from flags, PNEUMA_*
// environment variables and an optional config file, in that order of
// precedence.
type RunOptions struct {
	JobsFile string `mapstructure:"-"`

	Concurrency   int           `mapstructure:"concurrency"`
	Claude        string        `mapstructure:"claude"`
	OutputDir     string        `mapstructure:"output_dir"`
	KeepWorktrees string        `mapstructure:"keep_worktrees"`
	Pool          int           `mapstructure:"pool"`
	BudgetUSD     float64       `mapstructure:"budget_usd"`
	Stagger       time.Duration `mapstructure:"stagger"`
	StopGrace     time.Duration `mapstructure:"stop_grace"`
	FailFast      bool          `mapstructure:"fail_fast"`
	Quiet         bool          `mapstructure:"quiet"`
	JSON          bool          `mapstructure:"json"`
	Report        string        `mapstructure:"report"`
	JUnit         string        `mapstructure:"junit"`
	Summary       string        `mapstructure:"summary"`
	Shard         string        `mapstructure:"shard"`
	Only          []string      `mapstructure:"only"`
	DryRun        bool          `mapstructure:"dry_run"`
	Resume        string        `mapstructure:"resume"`
	RerunFailed   string        `mapstructure:"rerun_failed"`
	Config        string        `mapstructure:"config"`
	FallbackModel string        `mapstructure:"fallback_model"`
	CPUProfile    string        `mapstructure:"cpuprofile"`
	MemProfile    string        `mapstructure:"memprofile"`
	Sandbox       bool          `mapstructure:"sandbox"`
	// Notify are the config file's notification targets (docs/notifications.md).
	Notify []notify.Target `mapstructure:"notify"`
}

const runLong = `Run the jobs of a jobs file concurrently, each in its own git worktree and
branch, through the Claude Code CLI, and report what happened.

Settings come from flags, then PNEUMA_* environment variables (PNEUMA_CONCURRENCY,
PNEUMA_CLAUDE, PNEUMA_KEEP_WORKTREES, ...), then a config file (--config, or
pneuma.yaml in the current directory).

EXIT STATUS
  0    every job succeeded
  1    one or more jobs failed (including timeouts and budget or turn limits)
       or were skipped
  2    usage or configuration error (invalid jobs file, unknown flag)
  3    environment error (not a git repository, claude not found, worktree
       setup failed)
  130  interrupted (Ctrl-C or SIGTERM; a second one kills every job at once)`

// NewCmdRun builds `pneuma run`. runF replaces the run in tests.
func NewCmdRun(io *IO, runF func(context.Context, *RunOptions) error) *cobra.Command {
	v := viper.New()
	cmd := &cobra.Command{
		Use:   "run JOBS.yaml | run --resume RUN-ID [JOBS.yaml]",
		Short: "Run Claude Code jobs concurrently in git worktrees",
		Long:  runLong,
		Example: `  pneuma run jobs.yaml
  pneuma run -j 8 --junit junit.xml --summary summary.md jobs.yaml
  pneuma run --shard 2/4 --report shard-2.json jobs.yaml
  pneuma run --resume 20261122-134501-3fa9`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 || (len(args) == 0 && !resumeGiven(c, io)) {
				return &UsageError{Err: fmt.Errorf("run takes one jobs file, got %d arguments", len(args)), Usage: c.UsageString()}
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			opts, err := loadRunOptions(v, c, io)
			if err != nil {
				return err
			}
			if opts.JSON {
				markJSON(c) // PNEUMA_JSON or json: in the config file
			}
			if len(args) == 1 {
				opts.JobsFile = args[0] // else --resume finds the run by its id
			}
			if runF != nil {
				return runF(c.Context(), opts)
			}
			return runRun(c.Context(), io, opts)
		},
	}
	f := cmd.Flags()
	f.IntP("concurrency", "j", 0, "jobs to run at once (default: the jobs file's, else the number of CPUs)")
	f.String("claude", "", "path of the claude CLI (default: claude on PATH)")
	f.String("output-dir", "", "run directory root (default: .pneuma in the jobs file's repository)")
	f.String("keep-worktrees", "on-failure", "keep job worktrees: always, on-failure or never")
	f.Int("pool", -1, "clean worktrees per repository kept in .pneuma/pool for the next run (default: the concurrency; 0: none)")
	f.Float64("budget-usd", 0, "stop starting jobs once the run has spent this much (overrides budget_usd)")
	f.Duration("stagger", -1, "time between the CLI starts of a wave, the first start of each slot (default: the file's stagger, else 100ms)")
	f.Duration("stop-grace", 2*time.Second, "wait after each step of stopping a job (interrupt, SIGINT, SIGTERM, SIGKILL)")
	f.Bool("fail-fast", false, "stop the run at the first failed job")
	f.BoolP("quiet", "q", false, "no progress output")
	f.Bool("json", false, "print JSON events, one per line, on stdout instead of the table")
	f.String("report", "", "also write report.json to this file")
	f.String("junit", "", "write a JUnit XML report to this file")
	f.String("summary", "", "write a Markdown summary to this file (also appended to $GITHUB_STEP_SUMMARY)")
	f.String("shard", "", "run one shard of the plan, i/n (1-based; default: detected from CI)")
	f.StringSlice("only", nil, "run only these jobs (comma-separated names)")
	f.Bool("dry-run", false, "print the plan (repos, branches, CLI argv) and run nothing")
	f.String("resume", "", "resume the run with this id after a crash, Ctrl-C or a usage limit: keep finished jobs, continue the rest (the jobs file is optional)")
	f.String("rerun-failed", "", "run again only the jobs that did not succeed in the run with this id")
	f.String("config", "", "config file (default: pneuma.yaml in the current directory, if any)")
	f.String("fallback-model", "", "model the CLI falls back to when the job's model is overloaded (for jobs without fallback_model)")
	f.Bool("sandbox", false, "run every job in a sandbox (bubblewrap, Linux): worktree writable, network only to the API and the job's sandbox.network")
	f.String("cpuprofile", "", "write a CPU profile of pneuma itself to this file (for scripts/bench-starts.sh)")
	_ = f.MarkHidden("cpuprofile") // the flag exists; only help leaves it out
	f.String("memprofile", "", "write a heap profile of pneuma itself to this file when the jobs are done, before the outputs (for scripts/bench-scale.sh)")
	_ = f.MarkHidden("memprofile")
	// -1 means "not given" for these two; help says what that means in
	// words instead of printing the sentinel as "(default -1)".
	for _, name := range []string{"stagger", "pool"} {
		f.Lookup(name).DefValue = "0"
	}
	return cmd
}

// resumeGiven reports whether --resume (or PNEUMA_RESUME) is set, with
// which the jobs file may be left out.
func resumeGiven(c *cobra.Command, io *IO) bool {
	v, _ := c.Flags().GetString("resume")
	return v != "" || io.Getenv("PNEUMA_RESUME") != ""
}

// loadRunOptions reads the settings of `pneuma run` (loadSettings).
func loadRunOptions(v *viper.Viper, c *cobra.Command, io *IO) (*RunOptions, error) {
	var o RunOptions
	if err := loadSettings(v, c, io, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// runRun is `pneuma run`.
func runRun(ctx context.Context, io *IO, o *RunOptions) error {
	io = syncErr(io)
	if o.CPUProfile != "" {
		stop, err := startCPUProfile(o.CPUProfile)
		if err != nil {
			return &UsageError{Err: err}
		}
		defer stop()
	}
	keep, err := runner.ParseKeepPolicy(o.KeepWorktrees)
	if err != nil {
		return &UsageError{Err: err}
	}
	git := worktree.New()
	// The jobs file's YAML tree is the largest live heap of a run (about
	// 3 KB a job) and garbage once planned: collect more often while it
	// lives, so that it does not set the run's peak RSS (issue 27).
	gc := debug.SetGCPercent(25)
	plan, prior, err := planRun(ctx, io, o, git)
	debug.SetGCPercent(runGCPercent(gc, io.Getenv("GOGC")))
	// The file is garbage now: collected here, and its pages given back,
	// the run's heap goal starts from the plan alone (not twice the plan
	// and the file: a 10,000-job run's heap grew to 42 MB before its next
	// collection, its peak RSS 71 MB).
	debug.FreeOSMemory()
	if err != nil {
		return err
	}
	if o.DryRun {
		return printPlan(io, plan)
	}
	if err := checkCLI(ctx, plan.Binary); err != nil {
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	warnUnsandboxed(io, plan)
	github := io.Getenv("GITHUB_ACTIONS") == "true"
	rep := newReporter(io, o, github)
	ropts := runner.Options{Git: git, Reporter: rep, Keep: keep, FailFast: o.FailFast,
		Kill: killSignal(ctx), StopGrace: o.StopGrace, Pool: o.Pool}
	tel, stopTelemetry, err := startTelemetry(ctx, io, false)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	tel.Wire(&ropts)
	targets, err := runTargets(o.Notify, plan)
	if err != nil {
		return err
	}
	notes, stopNotify, err := startNotify(ctx, io, targets)
	if err != nil {
		return err
	}
	defer stopNotify()
	// --json's lines are written by the recorder, in its own encoding.
	lines, _ := rep.(*jsonReporter)
	if lines != nil {
		ropts.Reporter = nil
	}
	ropts.Reporter = notes.Reporter(ropts.Reporter, nil)
	var view *liveView
	observers := []runner.Reporter{ropts.Observer}
	if liveTerminal(io, o) {
		view = newLiveView(io.ErrOut, io.TermSize, io.Getenv("NO_COLOR") == "", plan.BudgetUSD, liveRedraws)
		observers = append(observers, view)
	}
	rec, err := openRecorder(runner.RunDir(plan.RunDir).Events(), io.ErrOut, observers...)
	if err != nil {
		if view != nil {
			view.Close()
		}
		return &ExitError{Code: ExitEnvironment, Err: err}
	}
	rec.lines = lines
	ropts.Observer = rec
	var r *report.Report
	if prior != nil {
		r, err = runner.Resume(ctx, plan, prior, ropts)
	} else {
		r, err = runner.Run(ctx, plan, ropts)
	}
	rep.Close()
	if view != nil {
		view.Close()
	}
	rec.Close(io.ErrOut)
	if o.MemProfile != "" {
		if perr := writeHeapProfile(o.MemProfile); perr != nil {
			fmt.Fprintf(io.ErrOut, "warning: %v\n", perr)
		}
	}
	if r == nil {
		return err
	}
	outErr := writeOutputs(io, o, r, github, runner.RunReportPath(plan))
	if !o.JSON {
		printRunSummary(io, plan, r)
	}
	switch {
	case err != nil:
		return err
	case outErr != nil:
		return &ExitError{Code: ExitEnvironment, Err: outErr}
	}
	return runExit(r)
}

// runGCPercent is the GC percent of a run once planned: 50 unless GOGC
// says otherwise (gc, what the runtime had). The heap a run keeps (its
// plan, about 1 KB a job, and its running jobs) is small and its garbage
// plentiful (each job's CLI, git and events): at 100 the heap swung up to
// twice the plan, which is what a 10,000-job run's peak RSS was made of.
// Proportional, unlike a fixed memory limit, it cannot thrash; with the
// CLIs' buffers pooled a run collects about as often as before at 100.
func runGCPercent(gc int, gogc string) int {
	if gogc != "" {
		return gc
	}
	return 50
}

// warnUnsandboxed prints one warning per run when jobs run in
// bypassPermissions without a sandbox.
func warnUnsandboxed(io *IO, plan *runner.Plan) {
	names := runner.UnsandboxedBypass(plan)
	if len(names) == 0 {
		return
	}
	list := strings.Join(names, ", ")
	if len(names) > 5 {
		list = strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	fmt.Fprintf(io.ErrOut, "warning: %d job(s) run in bypassPermissions without a sandbox (%s): every tool call runs unchecked with your user's access; add sandbox: true or --sandbox\n", len(names), list)
}

// startCPUProfile profiles pneuma's CPU into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close() // a profile cut short says so when read
	}, nil
}

// writeHeapProfile writes a heap profile of what pneuma holds now (after
// a garbage collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// planRun reads the jobs file and plans the run: a new one, the resumption
// of an earlier one (--resume), or a new run of what failed (--rerun-failed).
func planRun(ctx context.Context, io *IO, o *RunOptions, git *worktree.Manager) (*runner.Plan, *runner.Journal, error) {
	shard, err := resolveShard(o.Shard, io.Getenv)
	if err != nil {
		return nil, nil, &UsageError{Err: err}
	}
	var file *jobfile.File
	if o.JobsFile != "" {
		if file, err = jobfile.Read(o.JobsFile); err != nil {
			return nil, nil, &ExitError{Code: ExitUsage, Err: jobsFileErr(err)}
		}
	}
	bin, binErr := claude.Find(o.Claude, exec.LookPath)
	if binErr != nil && !o.DryRun {
		return nil, nil, &ExitError{Code: ExitEnvironment, Err: fmt.Errorf("%w\ninstall the Claude Code CLI with `npm install -g @anthropic-ai/claude-code`, or point --claude (or PNEUMA_CLAUDE) at it", binErr)}
	}
	if binErr != nil {
		bin = "claude" // a dry run shows the plan all the same
	}
	popts := runner.PlanOptions{Concurrency: o.Concurrency, Only: o.Only, Shard: shard, OutputDir: o.OutputDir,
		BudgetUSD: o.BudgetUSD, Stagger: o.Stagger, FallbackModel: o.FallbackModel, Binary: bin, Getenv: io.Getenv, IsRoot: os.Geteuid() == 0, Git: git,
		Sandbox: o.Sandbox}
	var plan *runner.Plan
	var prior *runner.Journal
	switch {
	case o.Resume != "":
		var warnings []string
		plan, prior, warnings, err = runner.ResumePlan(ctx, file, popts, o.Resume)
		for _, w := range warnings {
			fmt.Fprintf(io.ErrOut, "warning: %s\n", w)
		}
	case file == nil:
		return nil, nil, &UsageError{Err: errors.New("run takes one jobs file (only --resume can do without)")}
	case o.RerunFailed != "":
		plan, err = runner.RerunPlan(ctx, file, popts, o.RerunFailed)
	default:
		plan, err = runner.BuildPlan(ctx, file, popts)
	}
	var cerr *runner.ConfigError
	if errors.As(err, &cerr) {
		return nil, nil, &ExitError{Code: ExitUsage, Err: jobsFileErr(err)}
	}
	return plan, prior, err
}

// jobsFileErr introduces the problems of a jobs file.
func jobsFileErr(err error) error {
	var derr *jobfile.DecodeError
	var cerr *runner.ConfigError
	if errors.As(err, &derr) || errors.As(err, &cerr) {
		return fmt.Errorf("invalid jobs file:\n%w", err)
	}
	return err
}

// printRunSummary prints the table of a finished run for people.
func printRunSummary(io *IO, plan *runner.Plan, r *report.Report) {
	fmt.Fprintln(io.Out)
	_ = report.Table(io.Out, r) // a failed write to stdout has nowhere else to go
	fmt.Fprintf(io.Out, "\nrun %s: %s · report %s\n", r.RunID, r.Status, runner.RunReportPath(plan))
	if n := pooled(plan); n > 0 {
		fmt.Fprintf(io.Out, "%d clean worktree(s) kept in .pneuma/pool for the next run (pneuma clean removes them)\n", n)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(io.ErrOut, "warning: %s\n", w.Message)
	}
	err := r.EachJob(func(j *report.Job) error {
		for _, w := range j.Warnings {
			fmt.Fprintf(io.ErrOut, "warning: job %s: %s\n", j.Name, w.Message)
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(io.ErrOut, "warning: %v\n", err)
	}
}

// runExit maps a run's status to the command's exit.
func runExit(r *report.Report) error {
	switch r.Status {
	case report.RunSucceeded:
		return nil
	case report.RunInterrupted:
		return &SilentError{Code: ExitInterrupted}
	}
	return &SilentError{Code: ExitFailed}
}

// resolveShard takes --shard, else what CI says.
func resolveShard(flag string, getenv func(string) string) (runner.Shard, error) {
	if flag != "" {
		s, err := runner.ParseShard(flag)
		if err != nil {
			return runner.Shard{}, fmt.Errorf("--shard: %w", err)
		}
		return s, nil
	}
	s, ok, err := runner.DetectShard(getenv)
	if err != nil || !ok {
		return runner.Shard{}, err
	}
	return s, nil
}

// printPlan is --dry-run: every job with its repo, base, branch and argv.
func printPlan(io *IO, p *runner.Plan) error {
	fmt.Fprintf(io.Out, "run %s: %d jobs, concurrency %d, run directory %s\n", p.RunID, len(p.Jobs), p.Concurrency, p.RunDir)
	if p.Shard != nil {
		fmt.Fprintf(io.Out, "shard %d/%d\n", p.Shard.Index, p.Shard.Total)
	}
	if p.BudgetUSD > 0 {
		fmt.Fprintf(io.Out, "budget $%.2f\n", p.BudgetUSD)
	}
	for _, j := range p.Jobs {
		fmt.Fprintf(io.Out, "\njob %s\n", j.Name)
		fmt.Fprintf(io.Out, "  repo     %s\n", j.Repo)
		fmt.Fprintf(io.Out, "  base     %s (%s)\n", j.Base, shortSHA(j.BaseCommit))
		if j.UseWorktree {
			fmt.Fprintf(io.Out, "  branch   %s\n", j.Branch)
			fmt.Fprintf(io.Out, "  worktree %s\n", j.Dir)
		} else {
			fmt.Fprintf(io.Out, "  dir      %s (no worktree)\n", j.Dir)
		}
		if j.Timeout > 0 {
			fmt.Fprintf(io.Out, "  timeout  %s\n", j.Timeout)
		}
		if j.Sandbox.On() {
			fmt.Fprintf(io.Out, "  sandbox  %s\n", sandboxLine(j.Sandbox))
		}
		fmt.Fprintf(io.Out, "  argv     %s\n", quoteArgv(append([]string{p.Binary}, j.Args()...)))
		for i, pr := range j.Prompts {
			fmt.Fprintf(io.Out, "  prompt %d %s\n", i+1, text.Shorten(pr, 100))
		}
	}
	return nil
}

// sandboxLine says what a job's sandbox opens besides the defaults.
func sandboxLine(s *sandbox.Spec) string {
	var parts []string
	for _, l := range []struct {
		name string
		list []string
	}{{"network", s.Network}, {"read", s.Read}, {"write", s.Write}} {
		if len(l.list) > 0 {
			parts = append(parts, l.name+" "+strings.Join(l.list, ", "))
		}
	}
	if len(parts) == 0 {
		return "on (bubblewrap; the API endpoint only)"
	}
	return "on (bubblewrap; the API endpoint, " + strings.Join(parts, "; ") + ")"
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// quoteArgv shows argv unambiguously; it is never given to a shell.
func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// MinCLIVersion is the oldest Claude Code CLI pneuma drives: it needs
// stream-json input with the control protocol. pneuma is tested against
// 2.1.197 (docs/claude-cli.md).
const MinCLIVersion = "2.0.0"

// checkCLI makes sure bin is a Claude Code CLI recent enough for pneuma.
func checkCLI(ctx context.Context, bin string) error {
	v, err := claude.Version(ctx, bin)
	if err != nil {
		return fmt.Errorf("%s is not the Claude Code CLI: %w", bin, err)
	}
	if compareVersions(v, MinCLIVersion) < 0 {
		return fmt.Errorf("claude %s is too old: pneuma needs Claude Code %s or later for stream-json input (update with `npm install -g @anthropic-ai/claude-code`)", v, MinCLIVersion)
	}
	return nil
}

// compareVersions compares dotted numeric versions ("2.1.197"); anything
// after the numbers (a "-beta" suffix) is ignored.
func compareVersions(a, b string) int {
	pa, pb := versionParts(a), versionParts(b)
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func versionParts(v string) []int {
	var parts []int
	for _, f := range strings.Split(v, ".") {
		n := 0
		digits := 0
		for _, r := range f {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
			digits++
		}
		parts = append(parts, n)
		if digits < len(f) {
			break
		}
	}
	return parts
}

// limitLines prints the run's usage-limit and concurrency events as lines
// for people ("usage limit reached; waiting until 14:00 (3h12m) to resume 7
// jobs"), then passes every event on.
type limitLines struct {
	reporter
	w stdio.Writer
}

func (l *limitLines) Event(e runner.Event) {
	switch {
	case e.Message != "":
		fmt.Fprintf(l.w, "pneuma: %s\n", e.Message)
	case e.Type == runner.EventConcurrency:
		fmt.Fprintf(l.w, "pneuma: concurrency now %d (%s)\n", e.Concurrency, e.Reason)
	}
	l.reporter.Event(e)
}
