package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pneuma-cli/pneuma/runner"
	"github.com/pneuma-cli/pneuma/worktree"
)

// runPlaces are the directories that hold run directories: the current
// repository's .pneuma/runs, then a server's state directory's runs.
func runPlaces(ctx context.Context, stateDir string) []string {
	var places []string
	if wd, err := os.Getwd(); err == nil {
		root := wd
		if r, err := worktree.New().Root(ctx, wd); err == nil {
			root = r
		}
		places = append(places, runner.RepoLayout(root).Runs())
		if stateDir == "" {
			places = append(places, runner.StateDir(runner.RepoLayout(root).Serve()).Runs())
		}
	}
	if stateDir != "" {
		places = append(places, runner.StateDir(stateDir).Runs())
	}
	return places
}

// findRun finds a run directory: RUN is a run id (looked up in runPlaces)
// or the path of a run directory; empty, the latest run of the current
// repository.
func findRun(ctx context.Context, id, stateDir string) (runner.RunDir, error) {
	places := runPlaces(ctx, stateDir)
	if len(places) == 0 {
		return "", errors.New("no place to look for runs: the current directory is unknown; name a run directory")
	}
	if id == "" {
		return latestRun(places)
	}
	if strings.ContainsRune(id, filepath.Separator) {
		if isRunDir(id) {
			return runner.RunDir(id), nil
		}
		return "", fmt.Errorf("%s is not a run directory (no run.json or events.jsonl)", id)
	}
	if id == "." || id == ".." || !validRunID(id) {
		return "", fmt.Errorf("%q is not a run id", id)
	}
	for _, p := range places {
		if dir := filepath.Join(p, id); isRunDir(dir) {
			return runner.RunDir(dir), nil
		}
	}
	return "", fmt.Errorf("no run %s in %s", id, strings.Join(places, " or "))
}

// validRunID allows the characters run ids are made of.
func validRunID(id string) bool {
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return id != ""
}

// isRunDir says whether dir looks like a run's directory.
func isRunDir(dir string) bool {
	for _, f := range []string{runner.RunDir(dir).Journal(), runner.RunDir(dir).Events()} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	return false
}

// latestRun is the newest run of the repository: run ids begin with
// their start time (20261122-134501-3fa9), so the greatest id.
func latestRun(places []string) (runner.RunDir, error) {
	type cand struct {
		id, dir string
		mod     int64
	}
	var all []cand
	for _, p := range places[:1] { // the repository's runs, not the server's
		ents, err := os.ReadDir(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("read runs: %w", err)
		}
		for _, de := range ents {
			dir := filepath.Join(p, de.Name())
			if !de.IsDir() || !isRunDir(dir) {
				continue
			}
			if fi, err := os.Stat(dir); err == nil {
				all = append(all, cand{de.Name(), dir, fi.ModTime().UnixNano()})
			}
		}
	}
	if len(all) == 0 {
		return "", fmt.Errorf("no runs in %s: name one (pneuma status RUN-ID)", places[0])
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].id != all[j].id {
			return all[i].id > all[j].id
		}
		return all[i].mod > all[j].mod
	})
	return runner.RunDir(all[0].dir), nil
}
