package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// parkedTree is a finished job's clean worktree, waiting for the next job.
type parkedTree struct {
	dir string
	// watch, when not nil, vouched at the end of the job that the tree is
	// still the checkout it was made as, and goes on watching it.
	watch *worktree.Watch
}

// park keeps a finished job's clean worktree for the next job of its repository.
func (r *run) park(repo string, t parkedTree) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parked == nil {
		r.parked = map[string][]parkedTree{}
	}
	r.parked[repo] = append(r.parked[repo], t)
}

// unpark takes a parked worktree of repo, if there is one.
func (r *run) unpark(repo string) (parkedTree, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	trees := r.parked[repo]
	if len(trees) == 0 {
		return parkedTree{}, false
	}
	t := trees[len(trees)-1]
	r.parked[repo] = trees[:len(trees)-1]
	return t, true
}

// loadPool parks the spare worktrees that earlier runs left in the pools of
// the plan's repositories, so that jobs reuse them first.
func (r *run) loadPool() {
	seen := map[string]bool{}
	for _, job := range r.plan.Jobs {
		if !job.UseWorktree || seen[job.Repo] {
			continue
		}
		seen[job.Repo] = true
		for _, dir := range RepoLayout(job.Repo).Spares() {
			r.park(job.Repo, parkedTree{dir: dir})
		}
	}
}

// loadSpare parks one spare worktree of job's repository's pool, for a
// server session (a run of one job) to reuse.
func (r *run) loadSpare(job *Job) {
	if !job.UseWorktree {
		return
	}
	if spares := RepoLayout(job.Repo).Spares(); len(spares) > 0 {
		r.park(job.Repo, parkedTree{dir: spares[0]})
	}
}

// settleParked keeps up to Pool of the worktrees no job reused as spares
// for the next run, and removes the others. Keeping them is what spares the
// end of a run from deleting a tree per job slot, seconds each on a big
// repository.
func (r *run) settleParked(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	emptied := map[string]bool{}
	for repo, trees := range r.parked {
		pool := RepoLayout(repo).Pool()
		kept := 0
		for _, t := range trees {
			closeWatch(t.watch) // retiring or removing the tree is no change to watch for
			if from := filepath.Dir(t.dir); from != pool {
				emptied[from] = true
			}
			if kept < r.opts.Pool && r.spare(ctx, repo, t.dir, pool) {
				kept++
				continue
			}
			r.removeTree(ctx, repo, t.dir)
		}
	}
	for dir := range emptied {
		_ = os.Remove(dir) // the run's worktree directory, if empty; one that is not holds kept work
	}
	r.parked = nil
}

// spare keeps a parked clean worktree in the pool, moving it there unless
// it is there already. It reports whether the tree is now a spare.
func (r *run) spare(ctx context.Context, repo, dir, pool string) bool {
	if filepath.Dir(dir) == pool {
		return true
	}
	// <run id>-<job>: unique, and says where it came from.
	to := filepath.Join(pool, filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir))
	return r.git.Retire(ctx, repo, dir, to, true) == nil
}

// removeTree removes a clean worktree. When that fails the tree stays, and
// the report says so with a warning that `pneuma clean` acts on.
func (r *run) removeTree(ctx context.Context, repo, dir string) {
	err := r.git.Remove(ctx, repo, dir)
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, report.Warning{
		Code:    report.WarnWorktreeNotRemoved,
		Message: fmt.Sprintf("could not remove the worktree %s (pneuma clean removes it): %v", dir, err),
		Path:    dir,
	})
}
