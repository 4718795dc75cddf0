package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// The finish stage on real git worktrees: what it commits, what it records,
// and which worktrees it parks for the next job.
func TestFinishStage(t *testing.T) {
	tests := []struct {
		name       string
		change     func(t *testing.T, dir string) // what the agent left
		commit     bool                           // the job's commit setting
		status     string
		keep       KeepPolicy
		wantFiles  int
		wantCommit bool // the branch moved
		wantParked bool
	}{
		{"nothing changed", nil, true, report.StatusSucceeded, KeepOnFailure, 0, false, true},
		{"leftovers committed, then parked", writeTo("new.txt"), true, report.StatusSucceeded, KeepOnFailure, 1, true, true},
		{"a failed job keeps its worktree, work committed", writeTo("new.txt"), true, report.StatusFailed, KeepOnFailure, 1, true, false},
		{"keep always", writeTo("new.txt"), true, report.StatusSucceeded, KeepAlways, 1, true, false},
		{"commit off: uncommitted work is never removed", writeTo("new.txt"), false, report.StatusSucceeded, KeepNever, 0, false, false},
		{"commit off, clean: parked", nil, false, report.StatusSucceeded, KeepNever, 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := claudetest.GitRepo(t)
			git := worktree.New()
			base := claudetest.Git(t, repo, "rev-parse", "HEAD")
			job := &Job{Name: "j", Slug: "j", Repo: repo, BaseCommit: base, Branch: "pneuma/r/j", UseWorktree: true, Commit: tt.commit,
				Dir: RepoLayout(repo).Worktree("r", "j"), JobDir: string(RunDir(t.TempDir()).Job("j"))}
			if err := git.Create(context.Background(), worktree.CreateOptions{Repo: repo, Path: job.Dir, Branch: job.Branch, Base: base}); err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				tt.change(t, job.Dir)
			}
			rec, err := openRecords(JobDir(job.JobDir), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.close()
			r := &run{plan: &Plan{RunID: "r"}, opts: Options{Keep: tt.keep}, git: git}
			res := report.Job{Status: tt.status, Worktree: job.Dir}
			r.finishJob(context.Background(), job, &res, rec, "", nil)

			if res.FilesChanged != tt.wantFiles || (res.Commit != "") != tt.wantCommit {
				t.Fatalf("files %d commit %q, want %d files, moved %v (error %q)", res.FilesChanged, res.Commit, tt.wantFiles, tt.wantCommit, res.Error)
			}
			if _, parked := r.unpark(repo); parked != tt.wantParked {
				t.Fatalf("parked %v, want %v", parked, tt.wantParked)
			}
			if tt.wantParked != (res.Worktree == "") {
				t.Fatalf("report worktree %q with parked %v", res.Worktree, tt.wantParked)
			}
			// diff.patch exists when the branch moved, and then holds a patch.
			patch, err := os.ReadFile(JobDir(job.JobDir).Patch())
			if (err == nil) != tt.wantCommit || (err == nil && len(patch) == 0) || (err != nil && !os.IsNotExist(err)) {
				t.Fatalf("diff.patch: %d bytes (%v), want a patch: %v", len(patch), err, tt.wantCommit)
			}
			if !tt.commit && tt.change != nil {
				if _, err := os.Stat(filepath.Join(job.Dir, "new.txt")); err != nil {
					t.Fatalf("uncommitted work lost: %v", err)
				}
			}
		})
	}
}

func writeTo(name string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("work\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
