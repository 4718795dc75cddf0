package serve

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// TestPolicyClassifiesEveryField: a field added to the jobs file is
// refused until someone classifies it here (the refusal is the default;
// this test says which fields still wait).
func TestPolicyClassifiesEveryField(t *testing.T) {
	for _, tc := range []struct {
		typ   reflect.Type
		class map[string]fieldClass
		skip  []string
	}{
		{reflect.TypeOf(jobfile.Job{}), jobFieldClass, nil},
		{reflect.TypeOf(jobfile.File{}), fileFieldClass, []string{"defaults", "jobs"}},
	} {
		for i := range tc.typ.NumField() {
			key, _, _ := strings.Cut(tc.typ.Field(i).Tag.Get("yaml"), ",")
			if key == "" || key == "-" || contains(tc.skip, key) {
				continue
			}
			if tc.class[key] == 0 {
				t.Errorf("%s.%s is not classified: clients are refused it", tc.typ.Name(), key)
			}
		}
	}
	c := policyCheck{p: &Policy{}}
	var pe *PolicyError
	if err := c.field("jobs[0].sandbox", 0, &jobfile.Job{}, reflect.Value{}); !errors.As(err, &pe) || pe.Field != "jobs[0].sandbox" {
		t.Errorf("an unclassified field: %v", err)
	}
}

// TestPolicyDefaults: the default policy refuses bypassPermissions and
// every gated field, and takes the safe modes.
func TestPolicyDefaults(t *testing.T) {
	p := Policy{}
	p.defaults()
	c := policyCheck{p: &p}
	for _, m := range []string{"default", "acceptEdits", "plan"} {
		if err := c.job("", &jobfile.Job{PermissionMode: m}); err != nil {
			t.Errorf("mode %s: %v", m, err)
		}
	}
	// Fields that change nothing outside the CLI pass.
	if err := c.job("", &jobfile.Job{Effort: "high", IncludeHookEvents: true,
		Agents: map[string]jobfile.Agent{"r": {Description: "d", Prompt: "p", PermissionMode: "plan"}}}); err != nil {
		t.Errorf("effort, hook events and an agent in plan mode: %v", err)
	}
	for _, spec := range []jobfile.Job{{PermissionMode: "bypassPermissions"}, {Env: map[string]string{"X": "1"}},
		{ExtraArgs: []string{"--x"}}, {Settings: "{}"}, {MCPConfig: "{}"}, {AddDirs: []string{"/"}}, {Remote: "o"},
		{PluginDirs: []string{"p"}}, {Agent: "reviewer"},
		{Agents: map[string]jobfile.Agent{"r": {Description: "d", Prompt: "p", PermissionMode: "bypassPermissions"}}}} {
		if err := c.job("", &spec); err == nil {
			t.Errorf("%+v allowed by the default policy", spec)
		}
	}
}

// TestPolicyCaps: values above the operator's caps are refused by name.
func TestPolicyCaps(t *testing.T) {
	p := Policy{MaxTurns: 10, MaxBudgetUSD: 2, MaxTimeout: 600e9}
	p.defaults()
	c := policyCheck{p: &p}
	for _, tc := range []struct {
		spec  jobfile.Job
		field string
	}{
		{jobfile.Job{MaxTurns: 11}, "max_turns"},
		{jobfile.Job{MaxBudgetUSD: 2.5}, "max_budget_usd"},
		{jobfile.Job{Timeout: jobfile.Duration(601e9)}, "timeout"},
		{jobfile.Job{IdleTimeout: jobfile.Duration(601e9)}, "idle_timeout"},
	} {
		var pe *PolicyError
		if err := c.job("", &tc.spec); !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%+v: %v, want a refusal of %s", tc.spec, err, tc.field)
		}
	}
	if err := c.job("", &jobfile.Job{MaxTurns: 10, MaxBudgetUSD: 2, Timeout: jobfile.Duration(600e9)}); err != nil {
		t.Errorf("values at the caps: %v", err)
	}
}

// TestPolicyCapsAsDefaults: a limit the client leaves out is the operator's
// cap, never unlimited; one the client set stays.
func TestPolicyCapsAsDefaults(t *testing.T) {
	p := Policy{MaxTurns: 10, MaxBudgetUSD: 2, MaxTimeout: 600e9}
	f, err := jobfile.Decode("jobs.yaml", []byte("version: 1\njobs:\n  - name: a\n    prompt: x\n    max_turns: 3\n  - name: b\n    prompt: y\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range f.Jobs {
		p.capJob(&f.Jobs[i])
	}
	a, b := f.Jobs[0], f.Jobs[1]
	if a.MaxTurns != 3 || a.MaxBudgetUSD != 2 || b.MaxTurns != 10 || b.Timeout.Std() != 600e9 || !b.IsSet("max_turns") {
		t.Fatalf("capped jobs: a %d turns %g USD, b %d turns %s", a.MaxTurns, a.MaxBudgetUSD, b.MaxTurns, b.Timeout.Std())
	}
	spec, err := jobfile.DecodeSession([]byte(`{"repo":"."}`))
	if err != nil {
		t.Fatal(err)
	}
	p.capJob(&spec.Job)
	if spec.Job.MaxTurns != 10 || spec.Job.MaxBudgetUSD != 2 || spec.Job.Timeout.Std() != 600e9 {
		t.Fatalf("capped session: %+v", spec.Job)
	}
}

// TestPolicySandbox: a client may ask for a sandbox (its paths under a
// root); when the operator forces it, sandbox: false and extra hosts are
// refused and every job gets one.
func TestPolicySandbox(t *testing.T) {
	root := t.TempDir()
	decode := func(yaml string) *jobfile.Job {
		f, err := jobfile.Decode(filepath.Join(root, "jobs.yaml"), []byte("version: 1\njobs:\n  - name: a\n    prompt: x\n"+yaml))
		if err != nil {
			t.Fatal(err)
		}
		return &f.Jobs[0]
	}
	open, forced := Policy{}, Policy{Sandbox: true}
	open.defaults()
	forced.defaults()
	for _, tc := range []struct {
		p     *Policy
		yaml  string
		field string // "" for accepted
	}{
		{&open, "    sandbox: true\n", ""},
		{&open, "    sandbox: false\n", ""},
		{&open, "    sandbox: {read: [/etc]}\n", "sandbox.read[0]"},
		{&open, "    sandbox: {write: [sub], network: [example.com]}\n", ""},
		{&forced, "    sandbox: false\n", "sandbox"},
		{&forced, "    sandbox: {network: [example.com]}\n", "sandbox.network"},
		{&forced, "    sandbox: true\n", ""},
	} {
		c := policyCheck{p: tc.p, roots: []string{root}, dir: root}
		err := c.job("", decode(tc.yaml))
		var pe *PolicyError
		if tc.field == "" && err != nil || tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field) {
			t.Errorf("%q: %v, want refusal of %q", tc.yaml, err, tc.field)
		}
	}
	spec := decode("")
	forced.capJob(spec)
	if !spec.Sandbox.On() || !spec.IsSet("sandbox") {
		t.Errorf("a forced policy left the job unsandboxed: %+v", spec.Sandbox)
	}
}

// TestPolicyAllowedPaths: a field the operator allows still names paths
// under the roots only.
func TestPolicyAllowedPaths(t *testing.T) {
	root := t.TempDir()
	p := Policy{Allow: []string{"settings", "mcp_config", "add_dirs", "plugin_dirs"}}
	p.defaults()
	c := policyCheck{p: &p, roots: []string{root}, dir: root}
	for _, tc := range []struct {
		spec  jobfile.Job
		field string
	}{
		{jobfile.Job{Settings: "/etc/settings.json"}, "settings"},
		{jobfile.Job{MCPConfig: "../mcp.json"}, "mcp_config"},
		{jobfile.Job{AddDirs: []string{"sub", "/"}}, "add_dirs[1]"},
		{jobfile.Job{PluginDirs: []string{"/opt/plugins"}}, "plugin_dirs[0]"},
	} {
		var pe *PolicyError
		if err := c.job("", &tc.spec); !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%+v: %v, want a refusal of %s", tc.spec, err, tc.field)
		}
	}
	if err := c.job("", &jobfile.Job{Settings: `{"model":"x"}`, MCPConfig: "mcp.json", AddDirs: []string{"sub"}}); err != nil {
		t.Errorf("inline settings and paths under the root: %v", err)
	}
}
