package cmd

import (
	"context"
	"fmt"
	"github.com/pneuma-cli/pneuma/internal/text"
	"github.com/pneuma-cli/pneuma/jobfile"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/worktree"
)

// completionTimeout bounds the work behind one completion request: a shell
// waits for it on every Tab.
const completionTimeout = 3 * time.Second

// registerCompletions teaches the shell completion (`pneuma completion
// bash|zsh|fish|powershell`, cobra's) what pneuma knows: job names for --only
// from the jobs file on the command line, run ids for --resume and
// --rerun-failed from the run directory, and session ids for history show.
func registerCompletions(root *cobra.Command, io *IO) {
	if run, _, err := root.Find([]string{"run"}); err == nil && run.Name() == "run" {
		run.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		}
		_ = run.RegisterFlagCompletionFunc("only", completeJobNames)
		_ = run.RegisterFlagCompletionFunc("resume", completeRunIDs)
		_ = run.RegisterFlagCompletionFunc("rerun-failed", completeRunIDs)
	}
	if show, _, err := root.Find([]string{"history", "show"}); err == nil && show.Name() == "show" && show.ValidArgsFunction == nil {
		show.ValidArgsFunction = func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeSessionIDs(c, io), cobra.ShellCompDirectiveNoFileComp
		}
	}
}

// completeJobNames proposes the jobs of the jobs file given as the argument,
// each with the start of its prompt; after "a,b," it proposes the rest.
func completeJobNames(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f, err := jobfile.Read(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	prefix := ""
	taken := map[string]bool{}
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		prefix = toComplete[:i+1]
		for _, n := range strings.Split(toComplete[:i], ",") {
			taken[n] = true
		}
	}
	var out []string
	for _, j := range f.Jobs {
		if taken[j.Name] {
			continue
		}
		out = append(out, prefix+j.Name+"\t"+jobBlurb(j))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

func jobBlurb(j jobfile.Job) string {
	switch {
	case j.Prompt != "":
		return text.Shorten(j.Prompt, 60)
	case j.PromptFile != "":
		return "prompt_file " + j.PromptFile
	case len(j.Prompts) > 0:
		return text.Shorten(j.Prompts[0], 60)
	}
	return ""
}

// completeRunIDs proposes the runs in the run directory of the jobs file on
// the command line (or of the current repository, or --output-dir), newest
// first, each with its outcome.
func completeRunIDs(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	jobsFile := "pneuma.yaml" // only its directory matters
	if len(args) > 0 {
		jobsFile = args[0]
	}
	outputDir, _ := c.Flags().GetString("output-dir")
	layout, err := runner.RunLayout(ctx, worktree.New(), jobsFile, outputDir)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	entries, err := os.ReadDir(layout.Runs())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ids))) // run ids start with their time
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id + "\t" + runBlurb(layout.Run(id))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// runBlurb says how a run ended, from its report.
func runBlurb(dir runner.RunDir) string {
	data, err := os.ReadFile(dir.Report())
	if err != nil {
		return "no report: crashed or still running"
	}
	r, err := report.Decode(data)
	if err != nil {
		return "unreadable report"
	}
	t := r.Totals
	return fmt.Sprintf("%s: %d of %d jobs succeeded", r.Status, t.Succeeded, t.Jobs)
}

// completeSessionIDs proposes the Claude Code sessions of the config
// directory (--config-dir, $CLAUDE_CONFIG_DIR or ~/.claude), newest first.
func completeSessionIDs(c *cobra.Command, io *IO) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	dir, _ := c.Flags().GetString("config-dir")
	if dir == "" {
		dir = history.ConfigDir(io.Getenv)
	}
	files, err := history.ListSessions(ctx, dir)
	if err != nil {
		return nil
	}
	type session struct {
		id, project string
		mod         time.Time
	}
	sessions := make([]session, 0, len(files))
	for _, f := range files {
		s := session{id: f.ID, project: f.ProjectDir}
		if st, err := os.Stat(f.Path); err == nil {
			s.mod = st.ModTime()
		}
		sessions = append(sessions, s)
	}
	sort.SliceStable(sessions, func(i, j int) bool { return sessions[i].mod.After(sessions[j].mod) })
	out := make([]string, len(sessions))
	for i, s := range sessions {
		out[i] = s.id + "\t" + s.mod.Format("2006-01-02 15:04") + " " + filepath.Base(s.project)
	}
	return out
}
