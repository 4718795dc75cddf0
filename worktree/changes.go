package worktree

import (
	"bytes"
	"context"
	"fmt"
)

// Change actions.
const (
	Created  = "created"
	Modified = "modified"
	Deleted  = "deleted"
)

// Change is one file that differs from HEAD in a worktree.
type Change struct {
	Path   string `json:"path"`
	Action string `json:"action"`
}

// Changes lists what differs from HEAD in dir's worktree, uncommitted or
// untracked, with what happened to each file (a rename is the new path,
// created). Like Status it takes no lock git's own commands would meet.
func (m *Manager) Changes(ctx context.Context, dir string) ([]Change, error) {
	if _, err := m.checkLinks(dir); err != nil {
		return nil, fmt.Errorf("changes in %s: %w", dir, err)
	}
	out, err := m.exec(ctx, run{
		args: []string{"-C", dir, "status", "--porcelain=v1", "-z", "--untracked-files=all"},
		env:  []string{"GIT_OPTIONAL_LOCKS=0"},
	})
	if err != nil {
		return nil, fmt.Errorf("changes in %s: %w", dir, err)
	}
	return parseChanges(out), nil
}

// parseChanges parses `git status --porcelain=v1 -z` into changes.
func parseChanges(out []byte) []Change {
	changes := []Change{}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		x, y := f[0], f[1]
		c := Change{Path: string(f[3:]), Action: Modified}
		switch {
		case x == '?' || x == 'A' || x == 'R' || x == 'C' || y == 'A':
			c.Action = Created
		case x == 'D' || y == 'D':
			c.Action = Deleted
		}
		if x == 'R' || x == 'C' || y == 'R' || y == 'C' {
			i++ // the original path
		}
		changes = append(changes, c)
	}
	return changes
}
