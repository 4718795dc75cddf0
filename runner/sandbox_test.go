package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/pneuma-cli/pneuma/claude"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/sandbox"
)

func TestPlanSandbox(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &jobfile.File{Path: filepath.Join(dir, "jobs.yaml")}
	pl := &planner{ctx: context.Background(), f: f, fileDir: dir, p: &Plan{}}
	spec := jobfile.Job{Name: "a"}
	if err := decodeSandbox(t, &spec, "{write: [out], read: [missing]}"); err != nil {
		t.Fatal(err)
	}
	j := &Job{Name: "a"}
	pl.planSandbox(j, spec)
	if !j.Sandbox.On() || j.Sandbox.Write[0] != filepath.Join(dir, "out") {
		t.Errorf("sandbox = %+v, want write resolved to %s", j.Sandbox, filepath.Join(dir, "out"))
	}
	if len(pl.problems) != 1 || !strings.Contains(pl.problems[0].Msg, "missing") {
		t.Errorf("problems = %v, want one naming the missing read path", pl.problems)
	}

	// --sandbox turns it on for a job that says nothing, and for one that
	// opted out.
	pl = &planner{ctx: context.Background(), f: f, fileDir: dir, p: &Plan{}, o: PlanOptions{Sandbox: true}}
	for _, s := range []string{"", "false"} {
		spec := jobfile.Job{Name: "b"}
		if s != "" {
			if err := decodeSandbox(t, &spec, s); err != nil {
				t.Fatal(err)
			}
		}
		j := &Job{Name: "b"}
		pl.planSandbox(j, spec)
		if !j.Sandbox.On() {
			t.Errorf("--sandbox with sandbox %q: not sandboxed", s)
		}
	}
}

func TestUnsandboxedBypass(t *testing.T) {
	p := &Plan{Jobs: []*Job{
		{Name: "open"}, {Name: "boxed"}, {Name: "plain"},
	}}
	p.Jobs[0].Options.PermissionMode = "bypassPermissions"
	p.Jobs[1].Options.PermissionMode = "bypassPermissions"
	p.Jobs[1].Sandbox = &sandboxOn
	if got := UnsandboxedBypass(p); !slices.Equal(got, []string{"open"}) {
		t.Errorf("UnsandboxedBypass = %v, want [open]", got)
	}
}

var sandboxOn = sandbox.Spec{Enabled: true}

// decodeSandbox sets the job's sandbox from YAML.
func decodeSandbox(t *testing.T, j *jobfile.Job, doc string) error {
	t.Helper()
	return yaml.Unmarshal([]byte(doc), &j.Sandbox)
}

// confine starts the CLI through the box, with the CLI's own sandbox off
// and the settings and MCP config files passed inline (the sandbox may not
// see them).
func TestConfine(t *testing.T) {
	dir := t.TempDir()
	mcp, settings := filepath.Join(dir, "mcp.json"), filepath.Join(dir, "settings.json")
	if err := os.WriteFile(mcp, []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"model":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	box, err := sandbox.Open(sandbox.Config{Spec: sandboxOn, Bwrap: "/usr/bin/bwrap", Self: "/pneuma", Dir: dir, StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer box.Close()
	cfg := claude.Config{Binary: "/bin/claude", Dir: dir, Env: []string{"A=1"}}
	cfg.Options.MCPConfig, cfg.Options.Settings = mcp, settings
	if err := confine(box, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Options.MCPConfig != `{"mcpServers":{}}` || cfg.Options.Settings != `{"model":"x","sandbox":{"enabled":false}}` {
		t.Errorf("mcp_config %q, settings %q", cfg.Options.MCPConfig, cfg.Options.Settings)
	}
	if len(cfg.Launch) == 0 || cfg.Launch[0] != "/usr/bin/bwrap" || cfg.Launch[len(cfg.Launch)-1] != "--" || !slices.Contains(cfg.Launch, sandbox.ForwardCommand) {
		t.Errorf("launch %q", cfg.Launch)
	}
	if !slices.Contains(cfg.Env, "A=1") || !slices.Contains(cfg.Env, "IS_SANDBOX=1") {
		t.Errorf("env %q", cfg.Env)
	}
}

// A sandboxed job's git identity is asked of git once per run and
// repository: a later job sees the first answer, another repository its own.
func TestIdentitiesOncePerRepo(t *testing.T) {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	repo := func(name string) string {
		dir := t.TempDir()
		claudetest.Git(t, dir, "init", "-q")
		claudetest.Git(t, dir, "config", "user.name", name)
		claudetest.Git(t, dir, "config", "user.email", name+"@example.com")
		return dir
	}
	a, b := repo("Ada"), repo("Bea")
	var ids identities
	if name, email := ids.of(a, env); name != "Ada" || email != "Ada@example.com" {
		t.Fatalf("first: %q <%s>", name, email)
	}
	claudetest.Git(t, a, "config", "user.name", "Changed")
	if name, _ := ids.of(a, env); name != "Ada" {
		t.Errorf("asked git again for the same repository: %q", name)
	}
	if name, email := ids.of(b, env); name != "Bea" || email != "Bea@example.com" {
		t.Errorf("another repository: %q <%s>", name, email)
	}
}
