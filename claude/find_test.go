package claude

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	found := func(string) (string, error) { return "/usr/bin/claude", nil }
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	tests := []struct {
		name     string
		explicit string
		look     func(string) (string, error)
		want     string
		wantErr  string
	}{
		{"explicit", exe, missing, exe, ""},
		{"explicit relative becomes absolute", "claude", missing, exe, ""},
		{"explicit missing", filepath.Join(dir, "nope"), found, "", "no such file"},
		{"explicit not executable", plain, found, "", "not executable"},
		{"explicit directory", dir, found, "", "is a directory"},
		{"path", "", found, "/usr/bin/claude", ""},
		{"not on path", "", missing, "", "npm i -g @anthropic-ai/claude-code"},
	}
	t.Chdir(dir)
	t.Setenv("HOME", t.TempDir()) // no installer's places
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Find(tt.explicit, tt.look)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Find() error = %v, want ErrNotFound mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Find() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, printed, want, wantErr string
	}{
		{"claude code", "", "2.1.197", ""},
		{"prerelease", "2.2.0-beta.1 (Claude Code)", "2.2.0-beta.1", ""},
		{"not claude", "git version 2.43.0", "", "not a Claude Code version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin := fakecli.Install(t, fakecli.Scenario{Version: tt.printed})
			got, err := Version(context.Background(), bin)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Version() = %q, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Version() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	t.Run("missing binary", func(t *testing.T) {
		if _, err := Version(context.Background(), filepath.Join(t.TempDir(), "claude")); err == nil {
			t.Fatal("Version() of a missing binary succeeded")
		}
	})
}

func TestVersionRealCLI(t *testing.T) {
	bin := realCLI(t)
	want := claudetest.PinnedVersion(t, bin)
	got, err := Version(context.Background(), bin)
	if err != nil || got != want {
		t.Fatalf("Version() = %q, %v; want the pin %s", got, err, want)
	}
}

// realCLI returns the pinned real CLI through the one helper every test
// uses: it fails under CI=true when the CLI is missing, else skips.
func realCLI(t *testing.T) string {
	t.Helper()
	return claudetest.Binary(t)
}
