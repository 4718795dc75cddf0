package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

func TestFormatNotes(t *testing.T) {
	t.Parallel()
	got := formatNotes("v1.2.0", "abc1234 Build with Go 1.26\n\ndef5678 Fix panic on an empty config file\n9abcdef Add retries\n")
	want := "# Release notes (since v1.2.0)\n\n## Fixes\n\n- Fix panic on an empty config file\n\n## Changes\n\n- Build with Go 1.26\n- Add retries\n"
	if got != want {
		t.Errorf("formatNotes:\n%s\nwant:\n%s", got, want)
	}
}

func TestOutdated(t *testing.T) {
	t.Parallel()
	// go.mod as the Read tool shows it: numbered lines.
	gomod := "     1\tmodule example.com/app\n     2\t\n     3\trequire (\n     4\t\tgithub.com/spf13/cobra v1.7.0\n" +
		"     5\t\tgolang.org/x/sync v0.17.0\n     6\t)\n     7\trequire go.yaml.in/yaml/v3 v3.0.3\n"
	got := outdated(gomod)
	for _, want := range []string{"github.com/spf13/cobra v1.7.0 -> v1.10.1", "go.yaml.in/yaml/v3 v3.0.3 -> v3.0.4"} {
		if !strings.Contains(got, want) {
			t.Errorf("outdated() lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "golang.org/x/sync") {
		t.Errorf("outdated() lists an up-to-date module:\n%s", got)
	}
	if got := outdated("module x\n"); got != "No outdated dependencies.\n" {
		t.Errorf("outdated() of no requirements = %q", got)
	}
}

func TestLearnPairsCallsAndResults(t *testing.T) {
	t.Parallel()
	r := &fakeapi.Request{Messages: []fakeapi.Message{
		{Role: "user", Content: []fakeapi.Block{{Type: "text", Text: "go"}}},
		{Role: "assistant", Content: []fakeapi.Block{
			{Type: "tool_use", ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"pwd"}`)},
			{Type: "tool_use", ID: "b", Name: "Write", Input: json.RawMessage(`{"file_path":"/w/x"}`)},
		}},
		{Role: "user", Content: []fakeapi.Block{
			{Type: "tool_result", ToolUseID: "a", Content: "/w"},
			{Type: "tool_result", ToolUseID: "b", Content: "denied", IsError: true},
		}},
	}}
	k := learn(r)
	if b, ok := k.result("Bash", "pwd"); !ok || b.Content != "/w" {
		t.Errorf("result of pwd = %+v, %t", b, ok)
	}
	if b, ok := k.lastCall("Write"); !ok || !b.IsError {
		t.Errorf("last Write = %+v, %t; want the refused write", b, ok)
	}
	if _, ok := k.result("Read", "/w/x"); ok {
		t.Error("a Read that never happened has a result")
	}
}

// TestDemo runs the whole demo: pneuma built from this module, the real CLI,
// jobs.example.yaml. It checks what a newcomer is promised: every job
// succeeds, the changes are on the job branches, verify sends go vet's
// complaint back, a policy and plan mode each refuse a call.
func TestDemo(t *testing.T) {
	claude := claudetest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pneuma := filepath.Join(t.TempDir(), "pneuma")
	build := exec.CommandContext(ctx, "go", "build", "-o", pneuma, "github.com/pneuma-cli/pneuma")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build pneuma: %v\n%s", err, out)
	}
	parent := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"-jobs", "../../jobs.example.yaml", "-workdir", parent, "-timeout", "2m", "--", pneuma, claude}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("demo exited %d", code)
	}
	roots, _ := filepath.Glob(filepath.Join(parent, "pneuma-demo-*"))
	if len(roots) != 1 {
		t.Fatalf("workspaces %q, want one", roots)
	}
	app, other := filepath.Join(roots[0], "app"), filepath.Join(roots[0], "other-service")
	if !strings.Contains(stdout.String(), roots[0]) {
		t.Error("the demo does not print its workspace")
	}

	reports, _ := filepath.Glob(filepath.Join(app, ".pneuma", "runs", "*", "report.json"))
	if len(reports) != 1 {
		t.Fatalf("reports %q, want one", reports)
	}
	data, err := os.ReadFile(reports[0])
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status string `json:"status"`
		Jobs   []struct {
			Name              string           `json:"name"`
			Status            string           `json:"status"`
			Branch            string           `json:"branch"`
			Result            string           `json:"result"`
			Verify            []map[string]any `json:"verify"`
			PermissionDenials []map[string]any `json:"permission_denials"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	branches := map[string]string{}
	for _, j := range rep.Jobs {
		if j.Status != "succeeded" {
			t.Errorf("job %s %s", j.Name, j.Status)
		}
		branches[j.Name] = j.Branch
		if strings.Contains(j.Result, "no script") {
			t.Errorf("job %s has no script in the demo agent: %s", j.Name, j.Result)
		}
		switch j.Name {
		case "audit-deps":
			if len(j.PermissionDenials) != 1 || j.PermissionDenials[0]["tool_name"] != "Write" {
				t.Errorf("audit-deps denials %v, want the Write plan mode refused", j.PermissionDenials)
			}
		case "tidy-tests":
			if len(j.PermissionDenials) != 1 || j.PermissionDenials[0]["tool_name"] != "Bash" {
				t.Errorf("tidy-tests denials %v, want the rm -rf its policy refused", j.PermissionDenials)
			}
			if !strings.Contains(j.Result, "the tests pass") {
				t.Errorf("tidy-tests result %q, want passing tests", j.Result)
			}
		case "fix-lint":
			if len(j.Verify) != 2 || j.Verify[0]["passed"] != false || j.Verify[1]["passed"] != true {
				t.Errorf("fix-lint verify rounds %v, want a failed go vet, then a passing one", j.Verify)
			}
		}
	}
	if len(branches) != 5 {
		t.Errorf("jobs %v in the report, want the 5 of jobs.example.yaml", branches)
	}

	show := func(repo, rev string) string {
		t.Helper()
		out, err := git(ctx, repo, "show", rev)
		if err != nil {
			t.Error(err)
		}
		return out
	}
	for _, f := range []string{"cmd/serve.go", "cmd/version.go"} {
		if got := show(app, branches["add-license-header"]+":"+f); !strings.HasPrefix(got, strings.TrimSpace(licenseHeader)) {
			t.Errorf("%s on the add-license-header branch lacks the header:\n%s", f, got)
		}
	}
	if got := show(app, branches["fix-lint"]+":cmd/version.go"); !strings.Contains(got, vetGood) {
		t.Errorf("fix-lint did not fix cmd/version.go:\n%s", got)
	}
	if got := show(app, branches["fix-lint"]+":cmd/serve.go"); !strings.Contains(got, vetGoodServe) {
		t.Errorf("fix-lint did not fix cmd/serve.go after go vet failed:\n%s", got)
	}
	if got := show(app, branches["tidy-tests"]+":internal/legacy/README.md"); !strings.Contains(got, "git rm -r internal/legacy") {
		t.Errorf("tidy-tests left no note:\n%s", got)
	}
	if got := show(other, branches["release-notes"]+":RELEASE_NOTES.md"); !strings.Contains(got, "- Fix panic on an empty config file") {
		t.Errorf("RELEASE_NOTES.md:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(app, dependenciesMD)); err == nil {
		t.Error("plan mode let audit-deps write DEPENDENCIES.md")
	}
}
