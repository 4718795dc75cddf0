package cmd_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
)

// readGitHubOutput parses a $GITHUB_OUTPUT file as the Actions runner does:
// name=value lines and name<<DELIM ... DELIM blocks. A name written twice
// fails the test (the runner would keep the last, silently).
func readGitHubOutput(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, "=")
		if n, delim, heredoc := strings.Cut(line, "<<"); heredoc && (!ok || len(n) < len(name)) {
			var lines []string
			for sc.Scan() && sc.Text() != delim {
				lines = append(lines, sc.Text())
			}
			name, value, ok = n, strings.Join(lines, "\n"), true
		}
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q is neither name=value nor name<<DELIM", line)
		}
		if _, dup := out[name]; dup {
			t.Errorf("GITHUB_OUTPUT sets %s twice", name)
		}
		out[name] = value
	}
	return out
}

// `pneuma run` in GitHub Actions writes the run's outputs to $GITHUB_OUTPUT
// by itself, with or without pneuma's action.
func TestRunWritesGitHubOutput(t *testing.T) {
	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "second", Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Subtype: "error_max_turns", IsError: true, NumTurns: 3, CostUSD: 0.5, Errors: []string{"Reached maximum number of turns (2)"}})},
		fakecli.Exit(1),
	}}}})
	path := writeJobs(t, repo, "version: 1\nconcurrency: 1\njobs:\n  - name: one\n    prompt: first\n  - name: two\n    prompt: second\n")
	out := t.TempDir()
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"with report and junit", []string{"--report", filepath.Join(out, "r.json"), "--junit", filepath.Join(out, "junit.xml")}},
		{"bare", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ghOut := filepath.Join(t.TempDir(), "github_output")
			if err := os.WriteFile(ghOut, []byte("earlier=step\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "--claude", cli, "--stagger", "0"}, tc.flags...)
			r := run(t, "", map[string]string{"GITHUB_OUTPUT": ghOut}, append(args, path)...)
			if r.code != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
			}
			got := readGitHubOutput(t, ghOut)
			if got["earlier"] != "step" {
				t.Errorf("an earlier step's output was lost: %v", got)
			}
			rep := readReport(t, got["report"])
			if !filepath.IsAbs(got["report"]) || (len(tc.flags) > 0 && got["report"] != filepath.Join(out, "r.json")) {
				t.Errorf("report = %q", got["report"])
			}
			cost, err := strconv.ParseFloat(got["cost-usd"], 64)
			if err != nil || cost != rep.Totals.CostUSD || cost < 0.5 {
				t.Errorf("cost-usd = %q, report says %v", got["cost-usd"], rep.Totals.CostUSD)
			}
			want := map[string]string{"status": "failed", "succeeded": "1", "failed": "1", "run-id": rep.RunID}
			if len(tc.flags) > 0 {
				want["junit"] = filepath.Join(out, "junit.xml")
			} else {
				want["junit"] = ""
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
