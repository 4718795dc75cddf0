package main

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestImportDirection keeps the package graph as docs/architecture.md draws
// it: main → cmd → everything else, core packages free of the CLI libraries
// and of os.Stdout-owning code, and leaves importing no siblings they should
// not.
func TestImportDirection(t *testing.T) {
	const mod = "github.com/pneuma-cli/pneuma/"
	forbidden := map[string][]string{
		"claude":   {"cmd", "runner", "worktree", "history", "report", "policy", "telemetry"},
		"worktree": {"cmd", "runner", "claude", "history", "report", "policy", "telemetry"},
		"history":  {"cmd", "runner", "worktree", "report", "policy", "telemetry"},
		"report":   {"cmd", "runner", "claude", "worktree", "history", "policy", "telemetry"},
		"policy":   {"cmd", "runner", "claude", "worktree", "history", "report", "telemetry"},
		"sandbox":  {"cmd", "runner", "claude", "worktree", "history", "report", "policy", "serve", "telemetry"},
		"runner":   {"cmd", "serve", "telemetry"},
		// jobfile is the jobs file and the session spec: types, decoder and
		// defaults. It reads; it drives nothing (no processes, no git, no CLI).
		"jobfile": {"cmd", "runner", "serve", "claude", "worktree", "history", "report", "telemetry", "usage", "os/exec", "internal/proc"},
		"usage":   {"cmd", "runner", "claude", "worktree", "history", "report", "policy", "serve", "telemetry"},
		// serve holds no lifecycle logic: it reaches the CLI, git and policy
		// only through runner.
		"serve": {"cmd", "claude", "worktree", "policy", "telemetry"},
		// telemetry reads runner's events and the report; it drives nothing.
		"telemetry": {"cmd", "serve", "claude", "worktree", "policy", "history"},
		// live turns events into lines; cmd draws them.
		"live": {"cmd", "serve", "telemetry", "worktree", "history"},
		// notify reads runner's events and tells receivers; it drives nothing.
		"notify":    {"cmd", "serve", "claude", "worktree", "policy", "history", "telemetry"},
		"serve/web": {"cmd", "runner", "claude", "worktree", "history", "report", "policy", "serve", "telemetry"},
	}
	cliLibs := []string{"github.com/spf13/cobra", "github.com/spf13/viper", "github.com/schollz/progressbar/v3"}
	for pkg, banned := range forbidden {
		p, err := build.Import(mod+pkg, ".", 0)
		if err != nil {
			t.Fatalf("import %s: %v", pkg, err)
		}
		imports := append([]string(nil), p.Imports...)
		sort.Strings(imports)
		for _, imp := range imports {
			for _, b := range banned {
				if imp == mod+b || strings.HasPrefix(imp, mod+b+"/") || imp == b {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
			for _, lib := range cliLibs {
				if imp == lib {
					t.Errorf("core package %s imports %s (only cmd may)", pkg, lib)
				}
			}
		}
	}
	p, err := build.Import(mod[:len(mod)-1], ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if strings.HasPrefix(imp, mod) && imp != mod+"cmd" {
			t.Errorf("main imports %s; it must only call cmd.Main", imp)
		}
	}
}

// TestCoreNeverExitsOrPrints: below cmd nothing exits the process or writes
// to os.Stdout; they return errors and take io.Writers.
func TestCoreNeverExitsOrPrints(t *testing.T) {
	for _, pkg := range []string{"claude", "worktree", "history", "report", "policy", "runner", "jobfile", "sandbox", "serve", "serve/web", "usage", "telemetry", "notify", "live", "internal/eventlog"} {
		p, err := build.ImportDir(pkg, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.GoFiles {
			data, err := os.ReadFile(filepath.Join(pkg, f))
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "//") {
					continue
				}
				for _, bad := range []string{"os.Exit(", "log.Fatal", "os.Stdout"} {
					if strings.Contains(line, bad) {
						t.Errorf("%s/%s:%d uses %s", pkg, f, i+1, bad)
					}
				}
			}
		}
	}
}
