package claude

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSearchFind lays out a temporary home the way each installer does and
// checks that Find, with "claude" missing from PATH, picks the right binary.
func TestSearchFind(t *testing.T) {
	missing := func(string) (string, error) { return "", exec.ErrNotFound }
	tests := []struct {
		name  string
		files []string          // executables to create, relative to home
		plain []string          // non-executable files
		npmrc string            // ~/.npmrc content
		env   map[string]string // values may use $HOME
		want  string            // relative to home; "" means not found
	}{
		{"nvm newest version first",
			[]string{".nvm/versions/node/v9.11.2/bin/claude", ".nvm/versions/node/v20.10.0/bin/claude", ".nvm/versions/node/v18.19.1/bin/claude"},
			nil, "", nil, ".nvm/versions/node/v20.10.0/bin/claude"},
		{"nvm skips a version without an executable",
			[]string{".nvm/versions/node/v18.0.0/bin/claude"}, []string{".nvm/versions/node/v22.0.0/bin/claude"},
			"", nil, ".nvm/versions/node/v18.0.0/bin/claude"},
		{"NVM_DIR", []string{"n/versions/node/v20.0.0/bin/claude"}, nil, "",
			map[string]string{"NVM_DIR": "$HOME/n"}, "n/versions/node/v20.0.0/bin/claude"},
		{"fnm", []string{".local/share/fnm/node-versions/v22.1.0/installation/bin/claude"}, nil, "", nil,
			".local/share/fnm/node-versions/v22.1.0/installation/bin/claude"},
		{"FNM_DIR", []string{"f/node-versions/v20.0.0/installation/bin/claude"}, nil, "",
			map[string]string{"FNM_DIR": "$HOME/f"}, "f/node-versions/v20.0.0/installation/bin/claude"},
		{"volta", []string{".volta/bin/claude"}, nil, "", nil, ".volta/bin/claude"},
		{"asdf shim", []string{".asdf/shims/claude"}, nil, "", nil, ".asdf/shims/claude"},
		{"claude local before nvm", []string{".claude/local/claude", ".nvm/versions/node/v20.0.0/bin/claude"}, nil, "", nil, ".claude/local/claude"},
		{"native installer", []string{".local/bin/claude"}, nil, "", nil, ".local/bin/claude"},
		{"npm-global", []string{".npm-global/bin/claude"}, nil, "", nil, ".npm-global/bin/claude"},
		{"npmrc prefix", []string{"pfx/bin/claude", ".volta/bin/claude"}, nil, "cache=/tmp\nprefix = ~/pfx\n", nil, "pfx/bin/claude"},
		{"NPM_CONFIG_PREFIX before npmrc", []string{"env/bin/claude", "pfx/bin/claude"}, nil, "prefix=${HOME}/pfx\n",
			map[string]string{"NPM_CONFIG_PREFIX": "$HOME/env"}, "env/bin/claude"},
		{"relative env ignored", []string{".volta/bin/claude"}, nil, "", map[string]string{"VOLTA_HOME": "rel"}, ".volta/bin/claude"},
		{"system dir last", []string{"sys/claude"}, nil, "", nil, "sys/claude"},
		{"nothing", nil, []string{".volta/bin/claude"}, "", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			for _, f := range tt.files {
				write(t, filepath.Join(home, f), 0o755)
			}
			for _, f := range tt.plain {
				write(t, filepath.Join(home, f), 0o644)
			}
			if tt.npmrc != "" {
				if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(tt.npmrc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string { return strings.ReplaceAll(tt.env[k], "$HOME", home) }
			s := Search{LookPath: missing, Getenv: getenv, Home: home, System: []string{filepath.Join(home, "sys")}}
			got, err := s.Find("")
			if tt.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Fatalf("Find() = %q, %v; want ErrNotFound", got, err)
				}
				for _, p := range s.Places() {
					if !strings.Contains(err.Error(), p) {
						t.Errorf("error does not list %s: %v", p, err)
					}
				}
				return
			}
			if want := filepath.Join(home, tt.want); err != nil || got != want {
				t.Fatalf("Find() = %q, %v; want %q", got, err, want)
			}
		})
	}
}

// TestSearchPlacesCoverInstallers pins the list an error shows a user.
func TestSearchPlacesCoverInstallers(t *testing.T) {
	s := Search{Getenv: func(string) string { return "" }, Home: "/h"}
	got := strings.Join(s.Places(), "\n")
	for _, want := range []string{
		"/h/.npm-global/bin/claude", "/h/.claude/local/claude", "/h/.local/bin/claude",
		"/h/.nvm/versions/node/*/bin/claude", "/h/.local/share/fnm/node-versions/*/installation/bin/claude",
		"/h/.volta/bin/claude", "/h/.asdf/shims/claude", "/usr/local/bin/claude",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Places() lacks %s:\n%s", want, got)
		}
	}
}

func write(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
}
