package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// workspace is the demo's scratch world: the repository that holds the jobs
// file, the other repository it dispatches to, and a shared docs directory.
type workspace struct {
	Root       string // the temporary directory holding everything
	App        string // Root/app: git repository with jobs.yaml and what it references
	Other      string // Root/other-service: git repository of the release-notes job
	SharedDocs string // Root/shared-docs: plain directory (add_dirs)
	Home       string // Root/home: the CLI's scratch HOME
	JobsFile   string // App/jobs.yaml
}

// The files of the app repository. cmd/root.go has a license header, the
// other two lack one. go vet finds two faults: a Println call with a
// formatting directive in cmd/version.go (the one the fix-lint prompt names)
// and a %d of a string in cmd/serve.go (the one its verify step finds next).
// The module requires no module that the demo's offline go vet would need:
// its requirements are for audit-deps to read.
var appFiles = map[string]string{
	"go.mod": `module example.com/app

go 1.26

require (
	github.com/spf13/cobra v1.7.0
	go.yaml.in/yaml/v3 v3.0.3
	golang.org/x/sync v0.3.0
)
`,
	"README.md": "# app\n\nA small service, used by the pneuma demo.\n",
	"cmd/root.go": `// Copyright (c) 2026 Example Corp.
// SPDX-License-Identifier: MIT

package cmd

// Name is the app's command name.
const Name = "app"
`,
	"cmd/serve.go": `package cmd

import "fmt"

// Serve starts the server.
func Serve(addr string) error {
	fmt.Printf("listening on %d\n", addr)
	return nil
}
`,
	"cmd/version.go": `package cmd

import "fmt"

var version = "1.4.0"

// PrintVersion prints the version.
func PrintVersion() {
	fmt.Println("app version %s", version)
}
`,
	// Dead tests for the tidy-tests job.
	"internal/legacy/legacy.go": "// Package legacy is the old config loader, kept for its tests.\npackage legacy\n",
	"internal/legacy/legacy_test.go": `package legacy

import "testing"

func TestOldLoader(t *testing.T) { t.Skip("dead since v1.0: the loader is gone") }
`,
	"prompts/fix-lint.md": `Run go vet on this module in your head and fix what it reports:
cmd/version.go calls fmt.Println with a formatting directive.
Fix it with the smallest change that keeps the output the same.
`,
	// Settings for the release-notes job: let it run the read-only git
	// commands it needs without asking.
	".claude/ci-settings.json": `{
  "permissions": {
    "allow": ["Bash(pwd)", "Bash(git describe:*)", "Bash(git log:*)"]
  }
}
`,
	// An MCP configuration with no server: valid, and works offline.
	"mcp.json": "{\n  \"mcpServers\": {}\n}\n",
}

// releaseNotesStyle is the shared doc the release-notes job reads.
const releaseNotesStyle = `# Release notes style

- One line per change, imperative mood, no commit hashes.
- Group under "Fixes" and "Changes".
`

// otherHistory is the commit history of other-service after its v1.2.0 tag.
var otherHistory = []struct{ file, content, msg string }{
	{"client.go", "package service\n\n// Retries is how often the HTTP client retries.\nconst Retries = 3\n", "Add retries to the HTTP client"},
	{"config.go", "package service\n\n// Load never panics on an empty config.\nfunc Load(b []byte) error { return nil }\n", "Fix panic on an empty config file"},
	{"go.mod", "module example.com/other-service\n\ngo 1.26\n", "Build with Go 1.26"},
}

// newWorkspace builds the workspace in a new directory under parent (the
// system's temporary directory when empty), with a copy of jobsExample as
// App/jobs.yaml.
func newWorkspace(ctx context.Context, jobsExample, parent string) (*workspace, error) {
	example, err := os.ReadFile(jobsExample)
	if err != nil {
		return nil, fmt.Errorf("read the example jobs file: %w", err)
	}
	root, err := os.MkdirTemp(parent, "pneuma-demo-")
	if err != nil {
		return nil, fmt.Errorf("create the demo directory: %w", err)
	}
	// The CLI records real paths; keep ours comparable.
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	w := &workspace{
		Root:       root,
		App:        filepath.Join(root, "app"),
		Other:      filepath.Join(root, "other-service"),
		SharedDocs: filepath.Join(root, "shared-docs"),
		Home:       filepath.Join(root, "home"),
	}
	w.JobsFile = filepath.Join(w.App, "jobs.yaml")

	files := map[string]string{"jobs.yaml": string(example)}
	for name, content := range appFiles {
		files[name] = content
	}
	if err := writeFiles(w.App, files); err != nil {
		return nil, err
	}
	if err := writeFiles(w.SharedDocs, map[string]string{"release-notes-style.md": releaseNotesStyle}); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.Home, 0o700); err != nil {
		return nil, fmt.Errorf("create the scratch home: %w", err)
	}
	if err := w.initApp(ctx); err != nil {
		return nil, err
	}
	if err := w.initOther(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *workspace) initApp(ctx context.Context) error {
	if err := initRepo(ctx, w.App); err != nil {
		return err
	}
	if err := commitAll(ctx, w.App, "Initial import"); err != nil {
		return err
	}
	// A bare repository stands in for the app's origin, so that fix-lint's
	// push goes somewhere (its pull request needs gh, which the demo lacks).
	origin := filepath.Join(w.Root, "origin.git")
	if _, err := git(ctx, w.Root, "init", "-q", "--bare", origin); err != nil {
		return err
	}
	_, err := git(ctx, w.App, "remote", "add", "origin", origin)
	return err
}

func (w *workspace) initOther(ctx context.Context) error {
	if err := writeFiles(w.Other, map[string]string{"README.md": "# other-service\n"}); err != nil {
		return err
	}
	if err := initRepo(ctx, w.Other); err != nil {
		return err
	}
	if err := commitAll(ctx, w.Other, "Initial import"); err != nil {
		return err
	}
	if _, err := git(ctx, w.Other, "tag", "-a", "v1.2.0", "-m", "v1.2.0"); err != nil {
		return err
	}
	for _, c := range otherHistory {
		if err := writeFiles(w.Other, map[string]string{c.file: c.content}); err != nil {
			return err
		}
		if err := commitAll(ctx, w.Other, c.msg); err != nil {
			return err
		}
	}
	return nil
}

func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// initRepo makes dir a repository on branch main, with a local identity so
// that pneuma can commit there under the demo's scratch HOME.
func initRepo(ctx context.Context, dir string) error {
	steps := [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "pneuma demo"},
		{"config", "user.email", "demo@pneuma.invalid"},
		{"config", "commit.gpgsign", "false"},
	}
	for _, args := range steps {
		if _, err := git(ctx, dir, args...); err != nil {
			return err
		}
	}
	return nil
}

func commitAll(ctx context.Context, dir, msg string) error {
	if _, err := git(ctx, dir, "add", "-A"); err != nil {
		return err
	}
	_, err := git(ctx, dir, "commit", "-q", "-m", msg)
	return err
}

// git runs git in dir, ignoring the user's global and system configuration,
// and returns its trimmed stdout.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}
