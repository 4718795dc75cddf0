package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// fakeGHSource is the stand-in gh: it records its argv as JSON lines in
// $FAKE_GH_LOG, prints a pull request URL, and fails when $FAKE_GH_FAIL is set.
const fakeGHSource = `package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	f, err := os.OpenFile(os.Getenv("FAKE_GH_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(3)
	}
	_ = json.NewEncoder(f).Encode(os.Args[1:])
	f.Close()
	if os.Getenv("FAKE_GH_FAIL") != "" {
		fmt.Fprintln(os.Stderr, "pull request create failed: GraphQL: Head sha can't be blank")
		os.Exit(1)
	}
	fmt.Println("Creating pull request for branch into main")
	fmt.Println("https://github.com/example/app/pull/7")
}
`

// fakeGH builds the stand-in gh into a directory of its own and returns it.
func fakeGH(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(fakeGHSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module fakegh\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "gh"), ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build stand-in gh: %v\n%s", err, out)
	}
	return bin
}

// publishRepo is a repository with an origin (a bare repository) and a job
// branch one commit ahead of main.
func publishRepo(t *testing.T) (repo, bare, branch, head, base string) {
	t.Helper()
	repo = claudetest.GitRepo(t)
	bare = filepath.Join(t.TempDir(), "origin.git")
	claudetest.Git(t, repo, "init", "-q", "--bare", bare)
	claudetest.Git(t, repo, "remote", "add", "origin", bare)
	base = strings.TrimSpace(claudetest.Git(t, repo, "rev-parse", "HEAD"))
	branch = "pneuma/20261123-100000-ab12/fix-it"
	claudetest.Git(t, repo, "checkout", "-q", "-b", branch)
	if err := os.WriteFile(filepath.Join(repo, "fix.txt"), []byte("fixed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	claudetest.Git(t, repo, "add", "fix.txt")
	claudetest.Git(t, repo, "commit", "-q", "-m", "fix")
	head = strings.TrimSpace(claudetest.Git(t, repo, "rev-parse", "HEAD"))
	claudetest.Git(t, repo, "checkout", "-q", "main")
	return repo, bare, branch, head, base
}

func readGHLog(t *testing.T, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, argv)
	}
	return calls
}

func TestPublish(t *testing.T) {
	ghDir := fakeGH(t)
	pr := &jobfile.PullRequest{Title: "Fix: {{.Name}} ({{.FilesChanged}} file)", Body: "{{.Result}}\n+{{.Insertions}} -{{.Deletions}} on {{.Branch}}",
		Draft: true, Base: "main", Labels: []string{"bot", "pneuma"}}
	for _, tc := range []struct {
		name       string
		publish    *runner.Publish
		status     string
		noChanges  bool
		noGH       bool
		hook       bool // a pre-push hook planted in the repository
		ghFails    bool
		wantPushed bool
		wantURL    string
		wantGH     [][]string
		wantWarn   []string // code: words of the message
	}{
		{name: "push alone", publish: &runner.Publish{Remote: "origin"}, wantPushed: true},
		{name: "planted hook not run", publish: &runner.Publish{Remote: "origin"}, hook: true, wantPushed: true},
		{name: "pull request", publish: &runner.Publish{Remote: "origin", PullRequest: pr}, wantPushed: true,
			wantURL: "https://github.com/example/app/pull/7",
			wantGH: [][]string{{"pr", "create", "--head", "pneuma/20261123-100000-ab12/fix-it", "--title", "Fix: fix-it (1 file)",
				"--body", "All fixed.\n+1 -0 on pneuma/20261123-100000-ab12/fix-it", "--base", "main", "--draft", "--label", "bot", "--label", "pneuma"}}},
		{name: "default title and body", publish: &runner.Publish{Remote: "origin", PullRequest: &jobfile.PullRequest{}}, wantPushed: true,
			wantURL: "https://github.com/example/app/pull/7",
			wantGH: [][]string{{"pr", "create", "--head", "pneuma/20261123-100000-ab12/fix-it", "--title", "pneuma: fix-it",
				"--body", "All fixed.\n\n---\n1 files changed, 1 insertions(+), 0 deletions(-) on `pneuma/20261123-100000-ab12/fix-it`, job `fix-it` of pneuma run 20261123-100000-ab12.\n"}}},
		{name: "push fails", publish: &runner.Publish{Remote: "nowhere", PullRequest: pr},
			wantWarn: []string{"push_failed: git push -- nowhere refs/heads/pneuma/20261123-100000-ab12/fix-it", "nowhere", "is kept in"}},
		{name: "gh fails", publish: &runner.Publish{Remote: "origin", PullRequest: pr}, ghFails: true, wantPushed: true,
			wantGH:   [][]string{nil},
			wantWarn: []string{"pr_failed: gh pr create --head pneuma/20261123-100000-ab12/fix-it", "exit status 1", "Head sha can't be blank", "was pushed to origin"}},
		{name: "no gh", publish: &runner.Publish{Remote: "origin", PullRequest: pr}, noGH: true, wantPushed: true,
			wantWarn: []string{"pr_failed: gh is not installed"}},
		{name: "failed job", publish: &runner.Publish{Remote: "origin", PullRequest: pr}, status: report.StatusFailed},
		{name: "no changes", publish: &runner.Publish{Remote: "origin", PullRequest: pr}, noChanges: true},
		{name: "nothing asked", publish: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, bare, branch, head, base := publishRepo(t)
			job := &runner.Job{Name: "fix-it", Repo: repo, Branch: branch, Base: "HEAD", BaseCommit: base, UseWorktree: true, Publish: tc.publish}
			res := &report.Job{Name: "fix-it", Status: report.StatusSucceeded, Result: "All fixed.", Commit: head, FilesChanged: 1, Insertions: 1}
			if tc.status != "" {
				res.Status = tc.status
			}
			if tc.noChanges {
				res.Commit = ""
			}
			marker := filepath.Join(t.TempDir(), "hook-ran")
			if tc.hook {
				hook := filepath.Join(gitOut(repo, "rev-parse", "--git-common-dir"), "hooks", "pre-push")
				if !filepath.IsAbs(hook) {
					hook = filepath.Join(repo, hook)
				}
				script := "#!/bin/sh\ntouch " + marker + "\nexit 1\n"
				if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			log := filepath.Join(t.TempDir(), "gh.log")
			path := ghDir + string(os.PathListSeparator) + filepath.Dir(mustLookPath(t, "git"))
			if tc.noGH {
				path = filepath.Dir(mustLookPath(t, "git"))
			}
			env := []string{"PATH=" + path, "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "FAKE_GH_LOG=" + log}
			if tc.ghFails {
				env = append(env, "FAKE_GH_FAIL=1")
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			runner.PublishForTest(ctx, job, res, "20261123-100000-ab12", env)

			if res.Pushed != tc.wantPushed || res.PRURL != tc.wantURL || res.Status != orStatus(tc.status) {
				t.Errorf("pushed %v pr_url %q status %s; want %v %q %s", res.Pushed, res.PRURL, res.Status, tc.wantPushed, tc.wantURL, orStatus(tc.status))
			}
			remote := gitOut(bare, "rev-parse", "--verify", "-q", "refs/heads/"+branch)
			if (remote == head) != tc.wantPushed {
				t.Errorf("remote has the branch at %q, want pushed=%v (head %s)", remote, tc.wantPushed, head)
			}
			if local := gitOut(repo, "rev-parse", "--verify", "-q", "refs/heads/"+branch); local != head {
				t.Errorf("the local branch is at %q, want %s: never lose the branch", local, head)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("pneuma's push ran a hook planted in the repository")
			}
			calls := readGHLog(t, log)
			if tc.wantGH != nil && len(calls) == 1 && tc.wantGH[0] == nil {
				tc.wantGH = calls // only that gh ran once
			}
			if !reflect.DeepEqual(calls, tc.wantGH) {
				t.Errorf("gh argv\n got %q\nwant %q", calls, tc.wantGH)
			}
			var warns []string
			for _, w := range res.Warnings {
				warns = append(warns, w.Code+": "+w.Message)
			}
			all := strings.Join(warns, "\n")
			if (len(tc.wantWarn) == 0) != (len(warns) == 0) {
				t.Errorf("warnings %q, want %q", warns, tc.wantWarn)
			}
			for _, w := range tc.wantWarn {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q:\n%s", w, all)
				}
			}
		})
	}
}

func orStatus(s string) string {
	if s == "" {
		return report.StatusSucceeded
	}
	return s
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gitOut(dir string, args ...string) string {
	out, _ := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	return strings.TrimSpace(string(out))
}

// A run with the real CLI: the job that changed something and asked for a
// pull request is pushed to the bare origin and gets one; the job that
// changed nothing is neither pushed nor proposed; report.json carries both.
func TestRunPushesAndOpensPullRequest(t *testing.T) {
	b := newBed(t)
	repo, bare, _, _, _ := publishRepo(t)
	ghDir := fakeGH(t)
	log := filepath.Join(t.TempDir(), "gh.log")
	b.jobs["TOKEN-CHANGE"] = writeFile("fix.md", "fixed\n")
	b.jobs["TOKEN-QUIET"] = func(*fakeapi.Request, string) fakeapi.Response { return fakeapi.Text("nothing to do") }
	p := b.plan(repo, `version: 1
defaults:
  permission_mode: acceptEdits
  max_turns: 5
  pull_request:
    title: "{{.Name}}: {{.FilesChanged}} file"
    labels: [bot]
jobs:
  - {name: change, prompt: TOKEN-CHANGE}
  - {name: quiet, prompt: TOKEN-QUIET}
`)
	env := b.env.Environ()
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + ghDir + string(os.PathListSeparator) + v
		}
	}
	env = append(env, "FAKE_GH_LOG="+log)
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	rep, err := runner.Run(ctx, p, runner.Options{Environ: env, StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	validateReport(t, runner.RunReportPath(p))
	change, quiet := jobByName(t, rep, "change"), jobByName(t, rep, "quiet")
	if change.Status != report.StatusSucceeded || !change.Pushed || change.PRURL != "https://github.com/example/app/pull/7" || len(change.Warnings) != 0 {
		t.Errorf("change: status %s pushed %v pr_url %q warnings %v", change.Status, change.Pushed, change.PRURL, change.Warnings)
	}
	if got := gitOut(bare, "rev-parse", "refs/heads/"+change.Branch); got != change.Commit {
		t.Errorf("origin has %s at %q, want %s", change.Branch, got, change.Commit)
	}
	if quiet.Pushed || quiet.PRURL != "" || gitOut(bare, "rev-parse", "--verify", "-q", "refs/heads/"+quiet.Branch) != "" {
		t.Errorf("quiet (no changes) was published: %+v", quiet)
	}
	calls := readGHLog(t, log)
	if len(calls) != 1 || !reflect.DeepEqual(calls[0][:7], []string{"pr", "create", "--head", change.Branch, "--title", "change: 1 file", "--body"}) ||
		!reflect.DeepEqual(calls[0][8:], []string{"--label", "bot"}) || !strings.HasPrefix(calls[0][7], "wrote fix.md") {
		t.Errorf("gh calls %q", calls)
	}
}
