// Package wire adapts the concrete worktree and history packages to the
// interfaces runner declares, for cmd and for tests that run real jobs.
package wire

import (
	"context"
	"io"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/worktree"
)

// Workspace adapts worktree.Manager to runner.Workspace.
type Workspace struct{ *worktree.Manager }

// NewWorkspace returns a Workspace over a default worktree.Manager.
func NewWorkspace() Workspace { return Workspace{worktree.New()} }

var _ runner.Workspace = Workspace{}

// CreateWorktree adds a linked worktree on a new branch.
func (w Workspace) CreateWorktree(ctx context.Context, repo, path, branch, base string) error {
	return w.Create(ctx, worktree.CreateOptions{Repo: repo, Path: path, Branch: branch, Base: base})
}

// ReuseWorktree moves a finished job's clean worktree to a new job.
func (w Workspace) ReuseWorktree(ctx context.Context, repo, from, path, branch, base string, untouched bool) error {
	return w.Reuse(ctx, worktree.ReuseOptions{Repo: repo, From: from, Path: path, Branch: branch, Base: base, Untouched: untouched})
}

// RetireWorktree keeps a parked worktree as a spare; runner parks only
// clean ones, so it is not scanned again.
func (w Workspace) RetireWorktree(ctx context.Context, repo, path, to string) error {
	return w.Retire(ctx, repo, path, to, true)
}

// WatchWorktree starts a worktree.Watch.
func (w Workspace) WatchWorktree(dir string) runner.WorktreeWatch { return w.Watch(dir) }

// DiffStat counts the changes between two commits.
func (w Workspace) DiffStat(ctx context.Context, dir, base, head string) (int, int, int, error) {
	s, err := w.Manager.DiffStat(ctx, dir, base, head)
	return s.Files, s.Insertions, s.Deletions, err
}

// WriteDiff writes the patch between two commits.
func (w Workspace) WriteDiff(ctx context.Context, dir, base, head string, out io.Writer) error {
	return w.Manager.WriteDiff(ctx, dir, base, head, out)
}

// SanitizeName is worktree.SanitizeName.
func (Workspace) SanitizeName(name string) string { return worktree.SanitizeName(name) }

// Transcripts adapts history to runner.Estimator.
type Transcripts struct{ Prices *history.PriceTable }

// NewTranscripts returns Transcripts priced with the embedded price table.
func NewTranscripts() Transcripts { return Transcripts{Prices: history.DefaultPrices()} }

var _ runner.Estimator = Transcripts{}

// SessionFile finds a session transcript.
func (Transcripts) SessionFile(configDir, cwd, sessionID string) (string, error) {
	return history.SessionPath(configDir, cwd, sessionID)
}

// Estimate prices a transcript and its subagents.
func (t Transcripts) Estimate(ctx context.Context, file string) (float64, report.Usage, error) {
	tot, err := history.TranscriptUsage(ctx, file, t.Prices)
	if err != nil {
		return 0, report.Usage{}, err
	}
	return tot.CostUSD, report.Usage{
		InputTokens:              tot.InputTokens,
		OutputTokens:             tot.OutputTokens,
		CacheReadInputTokens:     tot.CacheReadInputTokens,
		CacheCreationInputTokens: tot.CacheCreationInputTokens,
	}, nil
}

// Archive copies a transcript and its subagent files into dir.
func (Transcripts) Archive(ctx context.Context, file, dir string) error {
	return history.ArchiveSessionFile(ctx, file, dir)
}

// ConfigDir is the CLI config directory under an environment.
func (Transcripts) ConfigDir(getenv func(string) string) string { return history.ConfigDir(getenv) }
