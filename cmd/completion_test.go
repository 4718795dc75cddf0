package cmd_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// complete asks pneuma for completions through cobra's hidden __complete
// command, as the shell scripts do, and returns them and the directive line.
func complete(t *testing.T, dir string, env map[string]string, args ...string) ([]string, string) {
	t.Helper()
	r := run(t, dir, env, append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("__complete %v: exit %d\n%s", args, r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func names(lines []string) []string {
	out := []string{}
	for _, l := range lines {
		name, _, _ := strings.Cut(l, "\t")
		out = append(out, name)
	}
	return out
}

func TestCompletion(t *testing.T) {
	repo := claudetest.GitRepo(t)
	jobs := writeJobs(t, repo, "version: 1\njobs:\n  - {name: lint, prompt: Fix the lint}\n  - {name: docs, prompt: Write docs}\n  - {name: tests, prompts: [Add tests]}\n")
	layout := runner.RepoLayout(repo)
	older, newer := "20261122-130000-ab12", "20261123-090000-cd34"
	for _, id := range []string{older, newer} {
		if err := os.MkdirAll(string(layout.Run(id)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rep := &report.Report{Schema: report.Schema, RunID: older, Status: report.RunFailed,
		Jobs: []report.Job{{Name: "lint", Status: report.StatusSucceeded}, {Name: "docs", Status: report.StatusFailed}}}
	rep.Tally(false)
	if err := report.WriteJSON(layout.Run(older).Report(), rep); err != nil {
		t.Fatal(err)
	}
	claudeDir := t.TempDir()
	project := filepath.Join(claudeDir, "projects", "-src-app")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"0b5c8e0e-0000-4000-8000-000000000001", "0b5c8e0e-0000-4000-8000-000000000002"} {
		p := filepath.Join(project, id+".jsonl")
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		mod := time.Now().Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": claudeDir}

	for _, tc := range []struct {
		name      string
		dir       string
		args      []string
		want      []string
		directive string
		blurb     string
	}{
		{"only", "", []string{"run", jobs, "--only", ""}, []string{"lint", "docs", "tests"}, ":6", "Fix the lint"},
		{"only after a comma", "", []string{"run", jobs, "--only", "docs,"}, []string{"docs,lint", "docs,tests"}, ":6", ""},
		{"only without a jobs file", "", []string{"run", "--only", ""}, []string{}, ":4", ""},
		{"only with a broken jobs file", "", []string{"run", "/no/such/jobs.yaml", "--only", ""}, []string{}, ":4", ""},
		{"resume", "", []string{"run", jobs, "--resume", ""}, []string{newer, older}, ":36", "no report"},
		{"rerun-failed", "", []string{"run", jobs, "--rerun-failed", ""}, []string{newer, older}, ":36", "failed: 1 of 2 jobs succeeded"},
		{"rerun-failed in --output-dir", t.TempDir(), []string{"run", "--output-dir", layout.Root, "--rerun-failed", ""}, []string{newer, older}, ":36", ""},
		{"resume from the repository", repo, []string{"run", "--resume", ""}, []string{newer, older}, ":36", ""},
		{"history show", "", []string{"history", "show", ""},
			[]string{"0b5c8e0e-0000-4000-8000-000000000002", "0b5c8e0e-0000-4000-8000-000000000001"}, ":4", "-src-app"},
		{"schema", "", []string{"schema", ""}, []string{"jobs"}, ":4", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, directive := complete(t, tc.dir, env, tc.args...)
			if got := names(lines); !reflect.DeepEqual(got, tc.want) || directive != tc.directive {
				t.Errorf("got %v %s, want %v %s\n%s", got, directive, tc.want, tc.directive, strings.Join(lines, "\n"))
			}
			if tc.blurb != "" && !strings.Contains(strings.Join(lines, "\n"), tc.blurb) {
				t.Errorf("no description %q in\n%s", tc.blurb, strings.Join(lines, "\n"))
			}
		})
	}
}
