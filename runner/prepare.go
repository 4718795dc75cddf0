package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pneuma-cli/pneuma/worktree"
)

// Stage 1 of a job: prepare its workspace (the worktree and branch) and its
// records (stream.jsonl, stderr.log, audit.jsonl).

// workspace is a job's prepared worktree.
type workspace struct {
	// created says the worktree exists; fresh, that it was made now as a
	// clean checkout of the job's base.
	created, fresh bool
	// watch, when not nil, watches the worktree for changes since it was a
	// clean checkout (carried over from the job whose worktree was reused,
	// or started now), so that a job that changed nothing scans nothing.
	watch *worktree.Watch
}

// prepareWorkspace creates the job's worktree, or reuses it when a resumed
// run already made it, or takes over a finished job's clean one.
func (r *run) prepareWorkspace(ctx context.Context, job *Job, prior *JobState) (workspace, error) {
	if !job.UseWorktree {
		return workspace{}, nil
	}
	// A run stopped between making the worktree and the journal line that
	// says so left it on the job's branch: a resume takes it over too.
	resumed := prior != nil && (prior.WorktreeCreated || r.madeBefore(ctx, job))
	if resumed {
		if _, err := os.Stat(job.Dir); err == nil {
			return workspace{created: true}, nil
		}
	}
	if err := r.makeWorktreeRoom(job); err != nil {
		return workspace{}, err
	}
	if resumed {
		// The worktree went (--keep-worktrees never, or by hand) but its
		// branch holds the job's commits: check it out again.
		err := r.git.Create(ctx, worktree.CreateOptions{Repo: job.Repo, Path: job.Dir, Branch: job.Branch, Existing: true})
		if err == nil {
			return workspace{created: true}, nil
		}
		if !errors.As(err, new(*worktree.RefError)) {
			return workspace{}, fmt.Errorf("check out the branch of job %q again: %w", job.Name, err)
		}
		// No branch either: start afresh below.
	}
	if ws, ok := r.reuseParked(ctx, job); ok {
		return ws, nil
	}
	err := r.git.Create(ctx, worktree.CreateOptions{Repo: job.Repo, Path: job.Dir, Branch: job.Branch, Base: job.BaseCommit})
	if exists := (*worktree.ExistsError)(nil); errors.As(err, &exists) && exists.Kind == "branch" {
		if err = r.takeOverBranch(ctx, job); err == nil {
			return workspace{created: true}, nil
		}
	}
	if err != nil {
		return workspace{}, fmt.Errorf("create worktree for job %q: %w", job.Name, err)
	}
	return workspace{created: true, fresh: true, watch: r.git.Watch(job.Dir)}, nil
}

// takeOverBranch checks out job's branch, which a run killed after git
// made it and before its journal said so left behind: in a worktree being
// added, or in a parked worktree being moved to the job (still at the
// finished job's path), which is removed first (only when clean). The
// branch is named after this run and job, so it is the job's own.
func (r *run) takeOverBranch(ctx context.Context, job *Job) error {
	list, err := r.git.List(ctx, job.Repo)
	if err != nil {
		return err
	}
	for _, wt := range list {
		if wt.Branch == job.Branch && !sameDir(wt.Path, job.Dir) {
			if err := r.git.Remove(ctx, job.Repo, wt.Path); err != nil {
				return fmt.Errorf("branch %s is checked out at %s: %w", job.Branch, wt.Path, err)
			}
		}
	}
	return r.git.Create(ctx, worktree.CreateOptions{Repo: job.Repo, Path: job.Dir, Branch: job.Branch, Existing: true})
}

// madeBefore reports whether job's worktree already exists on its branch.
func (r *run) madeBefore(ctx context.Context, job *Job) bool {
	if _, err := os.Stat(job.Dir); err != nil {
		return false
	}
	list, err := r.git.List(ctx, job.Repo)
	if err != nil {
		return false
	}
	for _, wt := range list {
		if wt.Branch == job.Branch && sameDir(wt.Path, job.Dir) {
			return true
		}
	}
	return false
}

// sameDir reports whether a and b name one directory.
func sameDir(a, b string) bool {
	ai, errA := os.Stat(a)
	bi, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ai, bi)
}

// makeWorktreeRoom keeps .pneuma out of git's sight (once a repository in
// a run: a file read a job was 1.4 % of a run's CPU) and makes the
// directory that will hold the worktree.
func (r *run) makeWorktreeRoom(job *Job) error {
	if _, done := r.excluded.Load(job.Repo); !done {
		if err := r.git.Exclude(job.Repo, ExcludePattern); err != nil {
			return fmt.Errorf("exclude .pneuma in %s: %w", job.Repo, err)
		}
		r.excluded.Store(job.Repo, true)
	}
	if err := os.MkdirAll(filepath.Dir(job.Dir), 0o755); err != nil {
		return fmt.Errorf("create worktree directory: %w", err)
	}
	return nil
}

// reuseParked moves a finished job's parked worktree of the same repository
// to job, as a fresh checkout of its base on its branch. A tree that cannot
// be reused is removed when clean (and kept, with a warning, otherwise).
func (r *run) reuseParked(ctx context.Context, job *Job) (workspace, bool) {
	from, ok := r.unpark(job.Repo)
	if !ok {
		return workspace{}, false
	}
	// Asked again now: the watch saw whatever happened while it waited.
	untouched := from.watch.Untouched()
	err := r.git.Reuse(ctx, worktree.ReuseOptions{Repo: job.Repo, From: from.dir, Path: job.Dir,
		Branch: job.Branch, Base: job.BaseCommit, Untouched: untouched})
	if err == nil {
		if untouched && from.watch.Rearm(job.Dir) {
			return workspace{created: true, fresh: true, watch: from.watch}, true
		}
		closeWatch(from.watch)
		return workspace{created: true, fresh: true, watch: r.git.Watch(job.Dir)}, true
	}
	closeWatch(from.watch)
	// Could not reuse it (dirty since, moved away...): remove it if it is
	// clean (Remove refuses otherwise) and create afresh.
	r.removeTree(context.WithoutCancel(ctx), job.Repo, from.dir)
	return workspace{}, false
}

// records are the files a job or session writes as it runs.
type records struct {
	dir    JobDir
	stream *os.File
	stderr *tailFile
	audit  *audit
}

// openRecords creates the job's directory and opens its records: the
// stream now, stderr.log and audit.jsonl when something is written to them.
func openRecords(dir JobDir, stderrLimit int) (*records, error) {
	// One mkdir for a new job's directory under the run's jobs (MkdirAll
	// stats it and its parent first: two system calls more a job).
	if os.Mkdir(string(dir), 0o755) != nil {
		if err := os.MkdirAll(string(dir), 0o755); err != nil { // a resumed job's, or the first
			return nil, fmt.Errorf("create job directory: %w", err)
		}
	}
	stream, err := os.OpenFile(dir.Stream(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open stream file: %w", err)
	}
	return &records{dir: dir, stream: stream, stderr: newTailFile(dir.Stderr(), stderrLimit), audit: newAudit(dir.Audit())}, nil
}

// close closes the records; its error says which record may be incomplete.
// It is safe to call more than once.
func (rec *records) close() error {
	var errs []error
	if rec.audit != nil {
		errs = append(errs, rec.audit.close())
	}
	if rec.stderr != nil {
		errs = append(errs, rec.stderr.Close()) // lazyFile's errors name the log
	}
	if rec.stream != nil {
		if err := rec.stream.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, fmt.Errorf("close stream file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// closeWatch closes w, if any. A watch that fails to close leaks nothing
// pneuma can act on (its inotify descriptor is closed either way).
func closeWatch(w *worktree.Watch) { _ = w.Close() }
