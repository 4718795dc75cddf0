package runner

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/report"
)

// transcripts finds, prices and archives the CLI's session transcripts for
// the runner, through history's reader: the CLI's result is the only
// authoritative cost, but a job killed before its result has only the
// transcript to go by.
type transcripts struct {
	prices *history.PriceTable
}

// file finds the transcript of session id that ran in cwd under env.
func (t transcripts) file(env []string, cwd, id string) (string, error) {
	return history.SessionPath(history.ConfigDir(envLookup(env)), cwd, id)
}

// estimate prices a session's transcript (deduplicated, subagents included).
func (t transcripts) estimate(ctx context.Context, env []string, cwd, id string) (float64, report.Usage, error) {
	f, err := t.file(env, cwd, id)
	if err != nil {
		return 0, report.Usage{}, err
	}
	tot, err := history.TranscriptUsage(ctx, f, t.prices)
	if err != nil {
		return 0, report.Usage{}, err
	}
	return tot.CostUSD, tot.Tokens, nil
}

// archive copies a session's transcript and its subagents into dir and
// returns the copy's path.
func (t transcripts) archive(ctx context.Context, env []string, cwd, id, dir string) (string, error) {
	f, err := t.file(env, cwd, id)
	if err != nil {
		return "", nil // no transcript (never written, or persistence off): nothing to keep
	}
	if err := history.ArchiveSessionFile(ctx, f, dir); err != nil {
		return "", fmt.Errorf("archive transcript: %w", err)
	}
	return filepath.Join(dir, filepath.Base(f)), nil
}
