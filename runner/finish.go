package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// Stage 4 of a job: keep its work. Commit what the agent left uncommitted on
// its branch, record what changed, archive the transcript, and release the
// worktree (park a clean one for the next job, keep one with work in it).

// cleanupTimeout bounds the work after a job (commit, diff, archive), which
// runs even when the run is being interrupted.
const cleanupTimeout = 2 * time.Minute

// finish is one job's finish stage.
type finish struct {
	git  *worktree.Manager
	job  *Job
	res  *report.Job
	rec  *records
	lapT time.Time
	// clean: the worktree holds no uncommitted work (everything was just
	// committed, and the CLI and its tools are gone). untouched: it is still
	// the checkout of the base it was made as.
	clean, untouched bool
}

// lap adds the time since the last lap to ms.
func (f *finish) lap(ms *int64) {
	now := time.Now()
	*ms += now.Sub(f.lapT).Milliseconds()
	f.lapT = now
}

// warn adds a problem to the job's error without failing it.
func (f *finish) warn(format string, args ...any) {
	f.res.Error = joinErr(f.res.Error, fmt.Sprintf(format, args...))
}

// commitLeftovers commits uncommitted work on the job's branch and returns
// the branch's head ("" when it could not be read). A watch that vouches the
// worktree is untouched spares the scan. of says whose work it is ("run
// <id>", "server session <id>").
func (f *finish) commitLeftovers(ctx context.Context, of string) string {
	if f.untouched {
		f.clean = true
		return f.job.BaseCommit
	}
	if f.job.Commit {
		msg := fmt.Sprintf("pneuma: %s (%s)\n\nWork left uncommitted by job %q of %s, committed by pneuma.\nStatus: %s%s\n",
			f.job.Name, f.res.Status, f.job.Name, of, f.res.Status, reasonSuffix(f.res.Reason))
		sha, _, err := f.git.CommitAll(ctx, f.job.Dir, f.job.Branch, msg)
		f.lap(&f.res.Timings.CommitMS)
		if err != nil {
			f.warn("commit leftover changes: %v", err)
		} else {
			f.clean = true
			return sha
		}
	}
	head, err := f.git.Head(ctx, f.job.Dir)
	if err != nil {
		f.warn("read head: %v", err)
	}
	return head
}

// recordChanges counts what the branch changed against the base and writes
// diff.patch when it changed anything.
func (f *finish) recordChanges(ctx context.Context, head string) {
	if head == "" {
		return
	}
	defer f.lap(&f.res.Timings.DiffMS)
	if head != f.job.BaseCommit {
		f.res.Commit = head
		st, err := f.git.DiffStat(ctx, f.job.Dir, f.job.BaseCommit, head)
		if err != nil {
			f.warn("diff stat: %v", err)
		}
		f.res.FilesChanged, f.res.Insertions, f.res.Deletions = st.Files, st.Insertions, st.Deletions
	}
	if !f.job.UseWorktree || head == f.job.BaseCommit {
		return // the job worked in the repository itself, or changed nothing
	}
	if err := writePatch(ctx, f.git, f.rec.dir.Patch(), f.job.Dir, f.job.BaseCommit, head); err != nil {
		f.warn("%v", err)
	}
}

// writePatch writes the diff between two commits to path.
func writePatch(ctx context.Context, git *worktree.Manager, path, dir, base, head string) error {
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write diff.patch: %w", err)
	}
	err = git.WriteDiff(ctx, dir, base, head, out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write diff.patch: %w", err)
	}
	return nil
}

// archiveTranscript copies the session's transcript into the job's records.
func (f *finish) archiveTranscript(ctx context.Context, tx transcripts, env []string, sessionID string) {
	if sessionID == "" {
		return
	}
	defer f.lap(&f.res.Timings.ArchiveMS)
	path, err := tx.archive(ctx, env, f.job.Dir, sessionID, f.rec.dir.Transcript())
	if err != nil {
		f.warn("%v", err)
	}
	f.res.Transcript = path
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// finishJob is the finish stage of a job. It runs even when the run is being
// interrupted, on a context of its own. watch, when not nil, may vouch that
// the worktree is untouched since its checkout: then nothing is committed or
// scanned, and the watch is parked with the worktree (parked reports that:
// the caller must not close it then).
func (r *run) finishJob(ctx context.Context, job *Job, res *report.Job, rec *records, sessionID string, watch *worktree.Watch) (parked bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	f := &finish{git: r.git, job: job, res: res, rec: rec, lapT: time.Now(),
		untouched: job.UseWorktree && watch.Untouched()}
	// The objects git wrote in the job's sandbox reach the repository
	// before its git reads the branch or commits the worktree, whose index
	// may name blobs git add wrote there.
	boxOf(ctx).SyncRefs()
	var head string
	if job.UseWorktree {
		of := "run " + r.plan.RunID
		if r.client != nil {
			of = "server session " + r.plan.RunID
		}
		head = f.commitLeftovers(ctx, of)
	} else if h, err := r.git.Head(ctx, job.Dir); err == nil {
		head = h // the job worked in the repository itself; pneuma commits nothing there
	}
	f.recordChanges(ctx, head)
	publish(ctx, job, res, r.plan.RunID, r.opts.Environ)
	f.archiveTranscript(ctx, r.tx, childEnv(r.opts.Environ, job.Env), sessionID)
	if job.UseWorktree && r.removeWorktree(res) {
		parked = r.release(ctx, f, watch)
	}
	return parked
}

// release parks a clean worktree for the next job of its repository (it is
// removed at the end of the run if none takes it). A worktree with
// uncommitted work stays where it is.
func (r *run) release(ctx context.Context, f *finish, watch *worktree.Watch) (parked bool) {
	defer f.lap(&f.res.Timings.RemoveMS)
	if !f.clean {
		dirty, err := r.git.Status(ctx, f.job.Dir)
		if err != nil {
			f.warn("check worktree before removing it: %v", err)
			return false
		}
		if len(dirty) > 0 {
			return false
		}
	}
	t := parkedTree{dir: f.job.Dir}
	if f.clean && f.untouched {
		t.watch, parked = watch, true
	}
	r.park(f.job.Repo, t)
	f.res.Worktree = ""
	return parked
}

// setKeep changes the keep policy while the run goes on (a server
// session's Close and Shutdown differ only in it).
func (r *run) setKeep(k KeepPolicy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.opts.Keep = k
}

// removeWorktree says whether the keep policy lets a job's worktree go.
func (r *run) removeWorktree(res *report.Job) bool {
	r.mu.Lock()
	keep := r.opts.Keep
	r.mu.Unlock()
	switch keep {
	case KeepAlways:
		return false
	case KeepNever:
		return true
	}
	return res.Status == report.StatusSucceeded
}
