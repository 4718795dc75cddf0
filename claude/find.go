package claude

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// ErrNotFound means no usable Claude Code CLI binary was found.
var ErrNotFound = errors.New("claude code cli not found")

const installHint = "install it with `npm i -g @anthropic-ai/claude-code` or pass its path explicitly"

// Find returns the absolute path of the CLI binary to run: explicit when set
// (it must exist and be executable), otherwise the first "claude" found on
// PATH (lookPath, exec.LookPath when nil) or where its installers put it
// (see Search). The path is absolute because os/exec resolves a relative one
// against the child's Dir (the job's worktree). Failures wrap ErrNotFound.
func Find(explicit string, lookPath func(string) (string, error)) (string, error) {
	return Search{LookPath: lookPath}.Find(explicit)
}

// Find is the package-level Find with s's view of PATH, the environment and
// the home directory.
func (s Search) Find(explicit string) (string, error) {
	if explicit != "" {
		return checkExplicit(explicit)
	}
	lookPath := s.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	path, pathErr := lookPath("claude")
	if pathErr == nil {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		return path, nil
	}
	places := s.Places()
	for _, p := range places {
		if found := firstExecutable(p); found != "" {
			return found, nil
		}
	}
	return "", fmt.Errorf("%w on PATH (%w) nor in %s; %s", ErrNotFound, pathErr, strings.Join(places, ", "), installHint)
}

// checkExplicit returns explicit as an absolute path if it is an executable file.
func checkExplicit(explicit string) (string, error) {
	abs, err := filepath.Abs(explicit)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrNotFound, explicit, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %s: %w", ErrNotFound, abs, err)
	case fi.IsDir():
		return "", fmt.Errorf("%w: %s is a directory", ErrNotFound, abs)
	case fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%w: %s is not executable", ErrNotFound, abs)
	}
	return abs, nil
}

// versionTimeout bounds `claude --version`, which answers in well under a
// second but can stall on a broken install.
const versionTimeout = 30 * time.Second

var versionRE = regexp.MustCompile(`^(\d+\.\d+\.\d+\S*) \(Claude Code\)$`)

// Version runs `bin --version` and returns the version number, for example
// "2.1.197" from "2.1.197 (Claude Code)". Output that is not Claude Code's
// is an error.
func Version(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedBuffer{buf: &stdout, max: 64 << 10}
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 4 << 10}
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if msg := bytes.TrimSpace(stderr.Bytes()); len(msg) > 0 {
			return "", fmt.Errorf("run %s --version: %w: %s", bin, err, msg)
		}
		return "", fmt.Errorf("run %s --version: %w", bin, err)
	}
	out := bytes.TrimSpace(stdout.Bytes())
	m := versionRE.FindSubmatch(out)
	if m == nil {
		if len(out) > 200 {
			out = out[:200]
		}
		return "", fmt.Errorf("%s --version printed %q, not a Claude Code version", bin, out)
	}
	return string(m[1]), nil
}

// limitedBuffer keeps the first max bytes written and discards the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (w *limitedBuffer) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
