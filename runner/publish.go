package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
)

// Stage 4, after the changes are recorded: publish. A succeeded job with
// changes whose jobs file says push: true or pull_request: {...} has its
// branch pushed to the repository's remote and, for pull_request, a pull
// request opened with gh when gh is installed. Every failure here is a
// warning on the job (report.Job.Warnings) naming the command and its error;
// the branch stays in the repository whatever happens.

// Publish is what to do with a job's branch after it succeeds with changes.
type Publish struct {
	Remote      string               `json:"remote"`
	PullRequest *jobfile.PullRequest `json:"pull_request,omitempty"`
}

// DefaultRemote is where branches are pushed when the job names no remote.
const DefaultRemote = "origin"

// Warning codes of the publish stage.
const (
	WarnPushFailed = "push_failed"
	WarnPRFailed   = "pr_failed"
)

// publishOf is a job's publish settings from its spec (nil: publish nothing).
func publishOf(spec jobfile.Job) *Publish {
	push := spec.Push != nil && *spec.Push
	if !push && spec.PullRequest == nil {
		return nil
	}
	p := &Publish{Remote: spec.Remote, PullRequest: spec.PullRequest}
	if p.Remote == "" {
		p.Remote = DefaultRemote
	}
	return p
}

// publish pushes the job's branch and opens its pull request, as the job
// asks, when it succeeded with changes. environ is the environment git and
// gh run in (PATH there finds gh).
func publish(ctx context.Context, job *Job, res *report.Job, runID string, environ []string) {
	p := job.Publish
	if p == nil || res.Status != report.StatusSucceeded || !job.UseWorktree || job.Branch == "" || res.Commit == "" {
		return
	}
	env := append(append([]string(nil), environ...), "GIT_TERMINAL_PROMPT=0", "GH_PROMPT_DISABLED=1")
	ref := "refs/heads/" + job.Branch
	push := []string{"git", "push", "--", p.Remote, ref + ":" + ref}
	// The agent could write hooks into the repository's shared git dir: the
	// push runs none of them (worktree's own git does the same).
	noHooks := []string{"git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor="}
	if _, err := runTool(ctx, job.Repo, env, append(noHooks, push[1:]...)); err != nil {
		warnJob(res, WarnPushFailed, job.Repo, "%s: %v (the branch %s is kept in %s)", strings.Join(push, " "), err, job.Branch, job.Repo)
		return
	}
	res.Pushed = true
	if p.PullRequest == nil {
		return
	}
	gh := lookPathIn(env, "gh")
	if gh == "" {
		warnJob(res, WarnPRFailed, "", "gh is not installed: branch %s was pushed to %s; open its pull request by hand", job.Branch, p.Remote)
		return
	}
	argv, err := prArgv(gh, job, res, runID)
	if err != nil {
		warnJob(res, WarnPRFailed, "", "pull_request: %v (branch %s was pushed to %s)", err, job.Branch, p.Remote)
		return
	}
	out, err := runTool(ctx, job.Repo, env, argv)
	if err != nil {
		warnJob(res, WarnPRFailed, "", "gh pr create --head %s: %v (branch %s was pushed to %s)", job.Branch, err, job.Branch, p.Remote)
		return
	}
	res.PRURL = lastURL(out)
}

// prArgv is the gh command line that opens the job's pull request.
func prArgv(gh string, job *Job, res *report.Job, runID string) ([]string, error) {
	pr := job.Publish.PullRequest
	data := jobfile.TemplateData{Name: job.Name, Result: res.Result, Branch: job.Branch, Base: job.Base, RunID: runID,
		FilesChanged: res.FilesChanged, Insertions: res.Insertions, Deletions: res.Deletions, CostUSD: res.CostUSD}
	title, body, err := pr.Text(data)
	if err != nil {
		return nil, err
	}
	argv := []string{gh, "pr", "create", "--head", job.Branch, "--title", title, "--body", body}
	if pr.Base != "" {
		argv = append(argv, "--base", pr.Base)
	}
	if pr.Draft {
		argv = append(argv, "--draft")
	}
	for _, l := range pr.Labels {
		argv = append(argv, "--label", l)
	}
	return argv, nil
}

// runTool runs argv (never a shell) in dir and returns its stdout; an error
// carries the end of its stderr.
func runTool(ctx context.Context, dir string, env, argv []string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := lastLines(stderr.String(), 5); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return stdout.String(), nil
}

func warnJob(res *report.Job, code, path, format string, args ...any) {
	res.Warnings = append(res.Warnings, report.Warning{Code: code, Message: fmt.Sprintf(format, args...), Path: path})
}

// lookPathIn finds an executable name on the PATH of env.
func lookPathIn(env []string, name string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// lastURL is the last line of gh's output that is a URL: gh pr create
// prints the new pull request's.
func lastURL(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
			return l
		}
	}
	return ""
}

// lastLines joins the last n non-blank lines of s.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
