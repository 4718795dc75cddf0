package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/report"
)

func TestMain(m *testing.M) {
	fakecli.RunIfRequested()
	os.Exit(m.Run())
}

// action is the part of action.yml the runner reads.
type action struct {
	Inputs  map[string]struct{ Default string }
	Outputs map[string]struct{ Value string }
	Runs    struct {
		Using string
		Steps []actionStep
	}
}

type actionStep struct {
	Name, ID, Shell, Run, If string
	WorkingDirectory         string `yaml:"working-directory"`
	Env                      map[string]string
}

func readAction(t *testing.T) action {
	t.Helper()
	data, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// standinSource is a stand-in for npm, curl and a released pneuma: it
// records its name and argv as a JSON line in $STANDIN_LOG; as curl it
// copies $STANDIN_FILES/<base name of the URL> to the -o file.
const standinSource = `package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func main() {
	f, err := os.OpenFile(os.Getenv("STANDIN_LOG"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		os.Exit(3)
	}
	_ = json.NewEncoder(f).Encode(append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...))
	f.Close()
	if filepath.Base(os.Args[0]) != "curl" {
		return
	}
	out, url := "", os.Args[len(os.Args)-1]
	for i, a := range os.Args {
		if a == "-o" && i+1 < len(os.Args) {
			out = os.Args[i+1]
		}
	}
	data, err := os.ReadFile(filepath.Join(os.Getenv("STANDIN_FILES"), filepath.Base(url)))
	if err != nil {
		os.Stderr.WriteString("curl: (22) The requested URL returned error: 404\n")
		os.Exit(22)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		os.Exit(23)
	}
}
`

// standins builds the stand-in into a directory as npm and curl.
func standins(t *testing.T) (dir, bin string) {
	t.Helper()
	src := t.TempDir()
	for name, text := range map[string]string{"main.go": standinSource, "go.mod": "module standin\n\ngo 1.22\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "standin")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build stand-in: %v\n%s", err, out)
	}
	for _, name := range []string{"npm", "curl"} {
		if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir, bin
}

func readLog(t *testing.T, path string) [][]string {
	t.Helper()
	data, _ := os.ReadFile(path)
	var calls [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, argv)
	}
	return calls
}

// baseEnv is this process's environment without anything of a CI run.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "RUNNER_") || strings.HasPrefix(k, "PNEUMA_") || strings.HasPrefix(k, "INPUT_") || k == "CI" || k == "CLAUDE_CODE_VERSION" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func setEnv(env []string, k, v string) []string {
	out := []string{}
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

func getEnv(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}

var exprRE = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// runner plays the GitHub Actions runner for a composite action: it gives
// each step its own GITHUB_OUTPUT, evaluates the ${{ }} expressions it knows
// (inputs, strategy, github.action_path, steps outputs), applies GITHUB_PATH
// and stops at the first failing step, as the runner does.
type runner struct {
	t         *testing.T
	env       []string
	workspace string
	exprs     map[string]string
	outputs   map[string]map[string]string // step id -> outputs
}

func (r *runner) eval(s string) string {
	return exprRE.ReplaceAllStringFunc(s, func(m string) string {
		key := exprRE.FindStringSubmatch(m)[1]
		if v, ok := r.exprs[key]; ok {
			return v
		}
		if rest, ok := strings.CutPrefix(key, "steps."); ok {
			id, out, _ := strings.Cut(rest, ".outputs.")
			return r.outputs[id][out]
		}
		r.t.Errorf("action.yml uses ${{ %s }}, which this test does not know", key)
		return ""
	})
}

// step runs one step and returns its exit code and combined output.
func (r *runner) step(s actionStep) (int, string) {
	t := r.t
	if s.Shell != "bash" {
		t.Errorf("step %q: shell %q, want bash", s.Name, s.Shell)
	}
	if strings.Contains(s.Run, "${{") {
		t.Errorf("step %q: run: holds an expression; pass it through env: (no injection)", s.Name)
	}
	dir := t.TempDir()
	script, ghOut := filepath.Join(dir, "step.sh"), filepath.Join(dir, "output")
	if err := os.WriteFile(script, []byte(s.Run), 0o644); err != nil {
		t.Fatal(err)
	}
	env := setEnv(r.env, "GITHUB_OUTPUT", ghOut)
	for k, v := range s.Env {
		env = setEnv(env, k, r.eval(v))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = filepath.Join(r.workspace, r.eval(s.WorkingDirectory))
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("step %q: %v", s.Name, err)
		}
		code = ee.ExitCode()
	}
	if s.ID != "" {
		r.outputs[s.ID] = parseOutput(t, ghOut)
	}
	if data, err := os.ReadFile(getEnv(r.env, "GITHUB_PATH")); err == nil {
		for _, p := range strings.Fields(string(data)) {
			if !strings.Contains(getEnv(r.env, "PATH"), p) {
				r.env = setEnv(r.env, "PATH", p+string(os.PathListSeparator)+getEnv(r.env, "PATH"))
			}
		}
	}
	return code, string(out)
}

// parseOutput reads a GITHUB_OUTPUT file: name=value and name<<DELIM blocks.
func parseOutput(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		if name, delim, ok := strings.Cut(lines[i], "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for i++; i < len(lines) && lines[i] != delim; i++ {
				val = append(val, lines[i])
			}
			out[name] = strings.Join(val, "\n")
			continue
		}
		name, val, ok := strings.Cut(lines[i], "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q", lines[i])
		}
		out[name] = val
	}
	return out
}

// TestActionRunsPneuma plays action.yml's steps as the runner would, in a
// matrix job and outside one, and checks the action's outputs: they are
// what pneuma itself wrote to $GITHUB_OUTPUT.
func TestActionRunsPneuma(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pneuma")
	}
	a := readAction(t)
	if a.Runs.Using != "composite" {
		t.Fatalf("runs.using = %q, want composite", a.Runs.Using)
	}
	standinDir, _ := standins(t)
	cli := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "second", Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Subtype: "error_max_turns", IsError: true, NumTurns: 3, CostUSD: 0.25, Errors: []string{"Reached maximum number of turns (2)"}})},
		fakecli.Exit(1),
	}}}})
	actionPath, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                      string
		index, total              int
		inputs                    map[string]string
		wantCode                  int
		wantShard                 *report.Shard
		wantStatus                string
		wantSucceeded, wantFailed int
	}{
		{name: "matrix job 1 of 2", index: 0, total: 2, inputs: map[string]string{"concurrency": "2"},
			wantShard: &report.Shard{Index: 1, Total: 2}, wantStatus: "succeeded", wantSucceeded: 1},
		{name: "one job, every shard", index: 0, total: 1, inputs: map[string]string{"budget-usd": "5", "args": "--fail-fast --stagger 0s"},
			wantCode: 1, wantStatus: "failed", wantSucceeded: 1, wantFailed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := claudetest.GitRepo(t)
			// five is in shard 1 of 2 and one in shard 2 (by name hash).
			jobs := "version: 1\njobs:\n  - name: five\n    prompt: first\n  - name: one\n    prompt: second\n"
			if err := os.WriteFile(filepath.Join(repo, "jobs.yaml"), []byte(jobs), 0o644); err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			summary, ghPath, log := filepath.Join(tmp, "summary.md"), filepath.Join(tmp, "path"), filepath.Join(tmp, "standin.log")
			env := baseEnv("GITHUB_ACTIONS=true", "CI=true", "GITHUB_WORKSPACE="+repo, "GITHUB_STEP_SUMMARY="+summary,
				"GITHUB_PATH="+ghPath, "GITHUB_ACTION_PATH="+actionPath, "GITHUB_ACTION_REF=v0.0.0-test",
				"RUNNER_OS=Linux", "RUNNER_ARCH=X64", "RUNNER_TEMP="+tmp, "STANDIN_LOG="+log,
				"PNEUMA_CLAUDE="+cli, "PNEUMA_STAGGER=0s") // the workflow's env: for the step
			env = setEnv(env, "PATH", standinDir+string(os.PathListSeparator)+getEnv(env, "PATH"))
			r := &runner{t: t, env: env, workspace: repo, outputs: map[string]map[string]string{},
				exprs: map[string]string{"github.action_path": actionPath, "strategy.job-index": strconv.Itoa(tc.index), "strategy.job-total": strconv.Itoa(tc.total)}}
			for name, in := range a.Inputs {
				r.exprs["inputs."+name] = in.Default
			}
			for k, v := range tc.inputs {
				if _, ok := a.Inputs[k]; !ok {
					t.Fatalf("action.yml has no input %q", k)
				}
				r.exprs["inputs."+k] = v
			}
			code := 0
			for _, s := range a.Runs.Steps {
				var out string
				code, out = r.step(s)
				t.Logf("step %q: exit %d\n%s", s.Name, code, out)
				if code != 0 {
					break
				}
			}
			if code != tc.wantCode {
				t.Fatalf("the action exits %d, want %d", code, tc.wantCode)
			}
			got := map[string]string{}
			for name, o := range a.Outputs {
				got[name] = r.eval(o.Value)
			}
			rep := readJSONReport(t, got["report"])
			want := map[string]string{"status": tc.wantStatus, "succeeded": strconv.Itoa(tc.wantSucceeded), "failed": strconv.Itoa(tc.wantFailed),
				"run-id": rep.RunID, "report": filepath.Join(repo, "pneuma-report.json"), "junit": filepath.Join(repo, "pneuma-junit.xml"),
				"cost-usd": strconv.FormatFloat(rep.Totals.CostUSD, 'f', -1, 64)}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("output %s = %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("outputs %v, want exactly %v", got, want)
			}
			if (rep.Shard == nil) != (tc.wantShard == nil) || (rep.Shard != nil && *rep.Shard != *tc.wantShard) {
				t.Errorf("report shard %v, want %v", rep.Shard, tc.wantShard)
			}
			if st, err := os.Stat(got["junit"]); err != nil || st.Size() == 0 {
				t.Errorf("junit not written: %v", err)
			}
			if data, _ := os.ReadFile(summary); !bytes.Contains(data, []byte("| five |")) {
				t.Errorf("no job summary in GITHUB_STEP_SUMMARY:\n%s", data)
			}
			calls := readLog(t, log)
			if len(calls) != 1 || strings.Join(calls[0], " ") != "npm install --global --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code@2.1.197" {
				t.Errorf("npm calls %q, want one install of the pinned CLI", calls)
			}
		})
	}
}

func readJSONReport(t *testing.T, path string) *report.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("report output %q: %v", path, err)
	}
	r, err := report.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The install step maps the runner's OS and architecture to a release
// platform, and refuses the ones pneuma has no build for.
func TestActionInstallPlatform(t *testing.T) {
	for _, tc := range []struct{ os, arch, want, wantErr string }{
		{"Linux", "X64", "linux_amd64", ""},
		{"Linux", "ARM64", "linux_arm64", ""},
		{"macOS", "X64", "darwin_amd64", ""},
		{"macOS", "ARM64", "darwin_arm64", ""},
		{"Windows", "X64", "", "::error::pneuma does not run on Windows runners yet"},
		{"Linux", "ARM", "", "::error::pneuma has no build for RUNNER_ARCH 'ARM'"},
		{"", "X64", "", "::error::unknown RUNNER_OS"},
	} {
		t.Run(tc.os+"/"+tc.arch, func(t *testing.T) {
			cmd := exec.Command("bash", "action/install.sh", "platform")
			cmd.Env = baseEnv("RUNNER_OS="+tc.os, "RUNNER_ARCH="+tc.arch)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if got := strings.TrimSpace(stdout.String()); got != tc.want || (err != nil) != (tc.wantErr != "") || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("platform %q, err %v, stderr %q; want %q, %q", got, err, stderr.String(), tc.want, tc.wantErr)
			}
		})
	}
}

// The install step downloads a release archive and its checksums from the
// URL goreleaser publishes them at, checks the archive and installs pneuma;
// an archive that does not match is refused.
func TestActionInstallRelease(t *testing.T) {
	standinDir, standin := standins(t)
	files := t.TempDir()
	exe, err := os.ReadFile(standin) // the released "pneuma": the stand-in again
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	gz := gzip.NewWriter(&archive)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "pneuma", Mode: 0o755, Size: int64(len(exe))}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(exe)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive.Bytes())
	for _, tc := range []struct {
		name, version, checksum, wantURL, wantErr string
	}{
		{"a version", "1.2.3", hex.EncodeToString(sum[:]), "https://github.com/pneuma-cli/pneuma/releases/download/v1.2.3/pneuma_darwin_arm64.tar.gz", ""},
		{"latest", "latest", hex.EncodeToString(sum[:]), "https://github.com/pneuma-cli/pneuma/releases/latest/download/pneuma_darwin_arm64.tar.gz", ""},
		{"bad checksum", "v1.2.3", strings.Repeat("0", 64), "https://github.com/pneuma-cli/pneuma/releases/download/v1.2.3/pneuma_darwin_arm64.tar.gz", "does not match checksums.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, data := range map[string][]byte{
				"pneuma_darwin_arm64.tar.gz": archive.Bytes(),
				"checksums.txt":              []byte(fmt.Sprintf("%s  pneuma_darwin_arm64.tar.gz\n%s  pneuma_linux_amd64.tar.gz\n", tc.checksum, strings.Repeat("1", 64))),
			} {
				if err := os.WriteFile(filepath.Join(files, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tmp := t.TempDir()
			log, ghPath := filepath.Join(tmp, "log"), filepath.Join(tmp, "path")
			cmd := exec.Command("bash", "action/install.sh")
			cmd.Env = baseEnv("RUNNER_OS=macOS", "RUNNER_ARCH=ARM64", "RUNNER_TEMP="+tmp, "GITHUB_PATH="+ghPath,
				"PNEUMA_VERSION="+tc.version, "STANDIN_LOG="+log, "STANDIN_FILES="+files)
			cmd.Env = setEnv(cmd.Env, "PATH", standinDir+string(os.PathListSeparator)+getEnv(cmd.Env, "PATH"))
			out, err := cmd.CombinedOutput()
			if (err != nil) != (tc.wantErr != "") || !strings.Contains(string(out), tc.wantErr) {
				t.Fatalf("install: %v, want error %q\n%s", err, tc.wantErr, out)
			}
			calls := readLog(t, log)
			if len(calls) == 0 || calls[0][0] != "curl" || calls[0][len(calls[0])-1] != tc.wantURL {
				t.Errorf("calls %q, want curl of %s first", calls, tc.wantURL)
			}
			path, _ := os.ReadFile(ghPath)
			if tc.wantErr != "" {
				if len(path) != 0 {
					t.Errorf("a refused archive was added to GITHUB_PATH: %s", path)
				}
				return
			}
			bin := filepath.Join(tmp, "pneuma-bin")
			if strings.TrimSpace(string(path)) != bin {
				t.Errorf("GITHUB_PATH = %q, want %s", path, bin)
			}
			if last := calls[len(calls)-1]; strings.Join(last, " ") != "pneuma version" {
				t.Errorf("the installed pneuma was not run: %q", calls)
			}
		})
	}
}
