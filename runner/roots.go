package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckRoots returns an *OutsideRootsError unless path resolves (symlinks
// followed) under one of roots; no roots allow any path.
func CheckRoots(path string, roots []string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !underRoots(real, roots) {
		return &OutsideRootsError{Repo: path, Roots: roots}
	}
	return nil
}

// underRoots reports whether path (symlinks resolved) is inside one of roots.
func underRoots(path string, roots []string) bool {
	if len(roots) == 0 {
		return true
	}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(real, path); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(os.PathSeparator)) {
			return true
		}
	}
	return false
}

// OutsideRootsError is a repository outside the server's roots (403).
type OutsideRootsError struct {
	Repo  string
	Roots []string
}

func (e *OutsideRootsError) Error() string {
	return fmt.Sprintf("repository %s is not under any root (%s)", e.Repo, strings.Join(e.Roots, ", "))
}
