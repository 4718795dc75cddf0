package cmd_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/cmd"
	"github.com/pneuma-cli/pneuma/internal/testbed/boxtest"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
)

// A requested sandbox that cannot start fails the run before any job
// starts, naming what is missing; no job runs unsandboxed.
func TestRunSandboxFailsClosed(t *testing.T) {
	cli := fakecli.Install(t, fakecli.Scenario{})
	repo := claudetest.GitRepo(t)
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir() // git, and no bwrap
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	for name, c := range map[string]struct {
		yaml string
		args []string
	}{
		"field": {"version: 1\njobs:\n  - name: a\n    prompt: x\n    sandbox: true\n", nil},
		"flag":  {twoJobs, []string{"--sandbox"}},
	} {
		t.Run(name, func(t *testing.T) {
			writeJobs(t, repo, c.yaml)
			res := run(t, repo, nil, append(append([]string{"run", "--claude", cli}, c.args...), "jobs.yaml")...)
			if res.code != cmd.ExitEnvironment || !strings.Contains(res.stderr, "bubblewrap (bwrap) is not installed") {
				t.Fatalf("exit %d, stderr %q; want %d naming bubblewrap", res.code, res.stderr, cmd.ExitEnvironment)
			}
			if calls := fakecli.Calls(t, cli); len(calls) != 0 {
				t.Errorf("the CLI ran %d time(s)", len(calls))
			}
		})
	}
}

// pneuma run warns once per run about jobs in bypassPermissions without a
// sandbox.
func TestRunWarnsBypassWithoutSandbox(t *testing.T) {
	cli := fakecli.Install(t, fakecli.Scenario{})
	repo := claudetest.GitRepo(t)
	writeJobs(t, repo, "version: 1\ndefaults:\n  permission_mode: bypassPermissions\n  env: {IS_SANDBOX: \"1\"}\njobs:\n  - name: one\n    prompt: x\n  - name: two\n    prompt: y\n")
	res := run(t, repo, nil, "run", "--claude", cli, "jobs.yaml")
	const warning = "2 job(s) run in bypassPermissions without a sandbox (one, two)"
	if n := strings.Count(res.stderr, "without a sandbox"); n != 1 || !strings.Contains(res.stderr, warning) {
		t.Errorf("stderr has %d sandbox warnings, want one %q:\n%s", n, warning, res.stderr)
	}
}

// --dry-run shows which jobs run sandboxed and what they open.
func TestRunDryRunShowsSandbox(t *testing.T) {
	boxtest.Require(t, "the plan of a sandboxed job")
	cli := fakecli.Install(t, fakecli.Scenario{})
	repo := claudetest.GitRepo(t)
	writeJobs(t, repo, "version: 1\njobs:\n  - name: a\n    prompt: x\n    sandbox: {network: [example.com]}\n  - name: b\n    prompt: y\n")
	res := run(t, repo, nil, "run", "--dry-run", "--claude", cli, "jobs.yaml")
	if res.code != 0 || strings.Count(res.stdout, "  sandbox  ") != 1 || !strings.Contains(res.stdout, "sandbox  on (bubblewrap; the API endpoint, network example.com)") {
		t.Errorf("exit %d, dry run:\n%s%s", res.code, res.stdout, res.stderr)
	}
}
