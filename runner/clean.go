package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/worktree"
)

// Cleaned says what Clean removed from one repository.
type Cleaned struct {
	Repo string
	// Spares counts the spare worktrees removed from the pool.
	Spares int
	// Leftovers counts the worktrees that a run could not remove (its report
	// warned worktree_not_removed) and Clean did.
	Leftovers int
}

// Clean removes repo's spare worktrees and the clean worktrees its runs
// failed to remove. A worktree with uncommitted work is never removed: its
// error says which, and the others are still removed.
func Clean(ctx context.Context, git *worktree.Manager, repo string) (Cleaned, error) {
	l := RepoLayout(repo)
	c := Cleaned{Repo: repo}
	var errs []error
	for _, dir := range l.Spares() {
		if err := git.Remove(ctx, repo, dir); err != nil {
			errs = append(errs, err)
			continue
		}
		c.Spares++
	}
	_ = os.Remove(l.Pool()) // only if empty: a spare that could not go stays
	for _, dir := range leftovers(l) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			continue // removed since, by hand or by an earlier clean
		}
		if err := git.Remove(ctx, repo, dir); err != nil {
			errs = append(errs, err)
			continue
		}
		c.Leftovers++
		_ = os.Remove(filepath.Dir(dir)) // the run's worktree directory, if now empty
	}
	return c, errors.Join(errs...)
}

// leftovers lists the worktrees that the reports of l's runs say could not
// be removed.
func leftovers(l Layout) []string {
	runs, _ := os.ReadDir(l.Runs()) // no runs: nothing left over
	var dirs []string
	for _, e := range runs {
		rep, err := report.ReadJSON(l.Run(e.Name()).Report())
		if err != nil {
			continue // a run still going, or killed before its report: no warnings to act on
		}
		for _, w := range rep.Warnings {
			if w.Code == report.WarnWorktreeNotRemoved && w.Path != "" {
				dirs = append(dirs, w.Path)
			}
		}
	}
	return dirs
}

// String says what was removed, for people.
func (c Cleaned) String() string {
	s := fmt.Sprintf("%s: removed %d spare worktree(s)", c.Repo, c.Spares)
	if c.Leftovers > 0 {
		s += fmt.Sprintf(" and %d worktree(s) a run could not remove", c.Leftovers)
	}
	return s
}
