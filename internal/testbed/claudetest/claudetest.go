// Package claudetest finds the pinned Claude Code CLI and runs it hermetically
// in tests: a scratch HOME, the fake API of package fakeapi as its backend, no
// inherited environment, argv only, its own process group.
//
// A typical end-to-end test:
//
//	bin := claudetest.Binary(t) // skips (fails in CI) when the CLI is missing
//	api := fakeapi.New(t, fakeapi.Sequence(fakeapi.Text("hi")))
//	env := claudetest.NewEnv(t, api.URL, claudetest.WithMaxRetries(1))
//	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
//	defer cancel()
//	run := claudetest.RunCLI(t, ctx, bin, claudetest.GitRepo(t), env, "", claudetest.PrintArgs("Say hi.")...)
//	// run.Result(), run.OfType("assistant"), claudetest.Transcripts(t, env), api.Requests()
package claudetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/proc"
)

// EnvVar names the environment variable that points tests at a CLI binary.
const EnvVar = "PNEUMA_TEST_CLAUDE"

// cachedBinary is where `make claude-next` installs the newest pinned CLI (the
// one `make test` runs the suite on), relative to the module root.
const cachedBinary = ".cache/claude-next/node_modules/@anthropic-ai/claude-code/bin/claude.exe"

// DefaultTimeout bounds a RunCLI whose context has no deadline.
const DefaultTimeout = 2 * time.Minute

// Binary returns the path of the real Claude Code CLI: $PNEUMA_TEST_CLAUDE,
// else the copy `make claude` installs under the module root. When there is
// none the test fails if CI=true and is skipped otherwise. Under -short it is
// always skipped, since tests that run the CLI take seconds each.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping a test that runs the real Claude Code CLI in -short mode")
	}
	path := os.Getenv(EnvVar)
	if path == "" {
		if root, err := ModuleRoot(); err == nil {
			path = filepath.Join(root, cachedBinary)
		}
	}
	if path != "" {
		if fi, err := os.Stat(path); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return path
		}
	}
	msg := "the Claude Code CLI is not installed (looked at $" + EnvVar + " and " + cachedBinary + "): run `make claude-next`"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// ModuleRoot returns the nearest directory at or above the working directory
// holding a go.mod: where `make` installs the test tools (.cache/).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Env is a hermetic environment for one CLI run (or several that share a
// HOME, such as --resume).
type Env struct {
	Home      string   // scratch HOME
	ConfigDir string   // Home/.claude, or $CLAUDE_CONFIG_DIR when WithVar set it
	APIKey    string   // the fake ANTHROPIC_API_KEY; tests can assert it never leaks
	Vars      []string // KEY=VALUE, the whole environment of the CLI
}

// EnvOption adjusts an Env.
type EnvOption func(*envConfig)

type envConfig struct {
	vars map[string]string
}

// WithVar sets (or, with an empty v, removes) one environment variable.
func WithVar(k, v string) EnvOption {
	return func(c *envConfig) {
		if v == "" {
			delete(c.vars, k)
			return
		}
		c.vars[k] = v
	}
}

// WithMaxRetries sets CLAUDE_CODE_MAX_RETRIES, the CLI's API retry count
// (default 10, about three minutes of back-off for a persistent 500).
func WithMaxRetries(n int) EnvOption { return WithVar("CLAUDE_CODE_MAX_RETRIES", strconv.Itoa(n)) }

// NewEnv returns an environment that points the CLI at apiURL with a scratch
// HOME under t.TempDir and nothing inherited but PATH:
// ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY (a fake sk-test-… key),
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, DISABLE_TELEMETRY=1,
// DISABLE_AUTOUPDATER=1, and IS_SANDBOX=1 when running as root (without it the
// CLI refuses bypassPermissions).
func NewEnv(t testing.TB, apiURL string, opts ...EnvOption) *Env {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatalf("create scratch home: %v", err)
	}
	// The CLI records the realpath of directories; keep ours comparable.
	if real, err := filepath.EvalSymlinks(home); err == nil {
		home = real
	}
	key := "sk-test-" + strings.ToLower(rand.Text())
	c := &envConfig{vars: map[string]string{
		"HOME":               home,
		"PATH":               os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL": apiURL,
		"ANTHROPIC_API_KEY":  key,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
	}}
	if os.Geteuid() == 0 {
		c.vars["IS_SANDBOX"] = "1"
	}
	for _, o := range opts {
		o(c)
	}
	e := &Env{Home: home, ConfigDir: filepath.Join(home, ".claude"), APIKey: c.vars["ANTHROPIC_API_KEY"]}
	if d := c.vars["CLAUDE_CONFIG_DIR"]; d != "" {
		e.ConfigDir = d
	}
	for k, v := range c.vars {
		e.Vars = append(e.Vars, k+"="+v)
	}
	sort.Strings(e.Vars)
	return e
}

// Environ returns a copy of the environment, for exec.Cmd.Env.
func (e *Env) Environ() []string { return append([]string(nil), e.Vars...) }

// Run is the outcome of one CLI process.
type Run struct {
	Stdout   []byte
	Lines    []map[string]any // stdout decoded as NDJSON, one entry per line
	Stderr   string
	ExitCode int  // -1 when the process was killed by a signal
	Killed   bool // the context ended first and the process group was killed
	Duration time.Duration
}

// Result returns the last "result" line, or nil when there is none.
func (r *Run) Result() map[string]any {
	for i := len(r.Lines) - 1; i >= 0; i-- {
		if r.Lines[i]["type"] == "result" {
			return r.Lines[i]
		}
	}
	return nil
}

// OfType returns the stdout lines whose "type" is typ, in order.
func (r *Run) OfType(typ string) []map[string]any {
	var out []map[string]any
	for _, l := range r.Lines {
		if l["type"] == typ {
			out = append(out, l)
		}
	}
	return out
}

// PrintArgs returns the arguments of a headless run of prompt with
// stream-json output, followed by extra: -p PROMPT --output-format stream-json
// --verbose EXTRA….
func PrintArgs(prompt string, extra ...string) []string {
	return append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose"}, extra...)
}

// StdinArgs returns the arguments of a run driven by stream-json on stdin,
// followed by extra: -p --input-format stream-json --output-format stream-json
// --verbose EXTRA….
func StdinArgs(extra ...string) []string {
	return append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}, extra...)
}

// UserMessage returns one stdin stream-json line carrying a user prompt.
func UserMessage(text string) string {
	line, _ := json.Marshal(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": text},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
	return string(line) + "\n"
}

// RunCLI runs bin with args (argv, no shell) in dir with env's environment
// and stdin as its standard input (empty: /dev/null), and waits for it. The
// process gets its own process group, which is killed (SIGKILL) when ctx
// ends, setting Run.Killed (a context without deadline gets DefaultTimeout),
// and once more after the CLI exits, so tool processes it left behind die too. Lines of stdout that are not JSON
// fail the test: the CLI writes only NDJSON there.
func RunCLI(t testing.TB, ctx context.Context, bin, dir string, env *Env, stdin string, args ...string) *Run {
	t.Helper()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env.Environ()
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Own process group: the CLI's Bash tool starts children that must die with it.
	proc.NewGroup(cmd)
	proc.CancelBy(cmd, syscall.SIGKILL)
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	err := cmd.Wait()
	// Leftovers of the group (tool processes); a group already gone is not
	// an error, and any other failure shows as a survivor in the tests that
	// check for leaks.
	_ = proc.Signal(cmd.Process, syscall.SIGKILL)
	r := &Run{Stdout: stdout.Bytes(), Stderr: stderr.String(), Duration: time.Since(start), ExitCode: cmd.ProcessState.ExitCode()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Errorf("run %s: %v", bin, err)
	}
	if ctx.Err() != nil {
		r.Killed = true
		t.Logf("%s %s: killed after %v: %v", filepath.Base(bin), strings.Join(redact(args), " "), r.Duration.Round(time.Millisecond), ctx.Err())
	}
	r.Lines = decodeLines(t, "stdout", r.Stdout)
	t.Logf("%s %s: exit %d in %v, %d stdout lines", filepath.Base(bin), strings.Join(redact(args), " "), r.ExitCode, r.Duration.Round(time.Millisecond), len(r.Lines))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s stderr (tail):\n%s", filepath.Base(bin), tail(r.Stderr, 4000))
		}
	})
	return r
}

// redact shortens long arguments (prompts) for logs.
func redact(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if len(a) > 60 {
			a = a[:57] + "..."
		}
		out[i] = strconv.Quote(a)
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// decodeLines decodes NDJSON, failing the test on a line that is not a JSON
// object. A last line without "\n" is decoded too.
func decodeLines(t testing.TB, what string, data []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	rd := bufio.NewReader(bytes.NewReader(data))
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m map[string]any
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				t.Errorf("%s line %d is not a JSON object: %v: %.200q", what, n, jerr, line)
			} else {
				out = append(out, m)
			}
		}
		if err != nil {
			return out
		}
	}
}

// Transcripts returns every *.jsonl file under env's ConfigDir/projects,
// subagent sidechains (<session>/subagents/agent-*.jsonl) included, sorted.
func Transcripts(t testing.TB, env *Env) []string {
	t.Helper()
	var out []string
	root := filepath.Join(env.ConfigDir, "projects")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".jsonl") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("list transcripts: %v", err)
	}
	sort.Strings(out)
	return out
}

// ReadJSONL reads a JSONL file (a transcript) into one map per line, failing
// the test on a line that is not a JSON object.
func ReadJSONL(t testing.TB, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return decodeLines(t, filepath.Base(path), data)
}

// GitRepo returns a fresh git repository in t.TempDir (its realpath) with
// user.name and user.email set locally and one commit of README.md on branch
// main. It runs the real git.
func GitRepo(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatalf("resolve temp dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# test repo\n"), 0o644); err != nil {
		t.Fatalf("write README.md: %v", err)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "pneuma test"},
		{"config", "user.email", "test@pneuma.invalid"},
		{"config", "commit.gpgsign", "false"},
		{"add", "README.md"},
		{"commit", "-q", "-m", "initial commit"},
	} {
		Git(t, dir, args...)
	}
	return dir
}

// Git runs git with args in dir, isolated from the user's and system's git
// configuration, and returns its trimmed stdout; it fails the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr)
	}
	return strings.TrimSpace(string(out))
}

// pinFiles are the package.json files that pin the CLIs the tests run: the
// newest, which `make test` runs the whole suite on, and the oldest pneuma
// supports, which `make test-contract` runs the contract subset on.
var pinFiles = []string{"tools/claude-next/package.json", "tools/claude/package.json"}

// Pins returns the pinned CLI versions, the newest first, read from the pin
// files under the module root, so that version assertions follow a bump.
func Pins(t testing.TB) []string {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("find the pinned CLI versions: %v", err)
	}
	var pins []string
	for _, f := range pinFiles {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatalf("read the CLI pin: %v", err)
		}
		var pkg struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if err := json.Unmarshal(data, &pkg); err != nil {
			t.Fatalf("decode the CLI pin %s: %v", f, err)
		}
		v := pkg.Dependencies["@anthropic-ai/claude-code"]
		if v == "" {
			t.Fatalf("%s pins no @anthropic-ai/claude-code", f)
		}
		pins = append(pins, v)
	}
	return pins
}

// PinnedVersion returns the version of the CLI at bin (the "version" of the
// package.json it was installed with) and fails the test unless it is one of
// the pins.
func PinnedVersion(t testing.TB, bin string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatalf("resolve the CLI binary: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(real), "..", "package.json"))
	if err != nil {
		t.Fatalf("read the installed CLI's package.json: %v", err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil || pkg.Version == "" {
		t.Fatalf("decode the installed CLI's package.json: %v", err)
	}
	if !slices.Contains(Pins(t), pkg.Version) {
		t.Fatalf("the CLI at %s is %s, not one of the pins %v", bin, pkg.Version, Pins(t))
	}
	return pkg.Version
}

// AtLeast reports whether the pinned CLI at bin is version min or newer
// (dotted decimal, such as "2.1.332"). Tests whose assertions differ between
// the pins branch on it and name the version that changed the behaviour.
func AtLeast(t testing.TB, bin, min string) bool {
	t.Helper()
	return compareVersions(PinnedVersion(t, bin), min) >= 0
}

// compareVersions compares dotted decimal versions: -1, 0 or 1.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
