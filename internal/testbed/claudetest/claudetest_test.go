package claudetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// helperVar makes the test binary act as a stand-in CLI (the re-exec helper
// pattern), so RunCLI is tested without the real one.
const helperVar = "CLAUDETEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperVar) {
	case "":
		os.Exit(m.Run())
	case "echo": // report args, stdin and environment, then exit 3
		stdin, _ := io.ReadAll(os.Stdin)
		enc := json.NewEncoder(os.Stdout)
		enc.Encode(map[string]any{"type": "system", "subtype": "init"})
		enc.Encode(map[string]any{"type": "result", "args": os.Args[1:], "stdin": string(stdin), "env": os.Environ()})
		fmt.Fprint(os.Stdout, `{"type":"tail","no_newline":true}`)
		fmt.Fprint(os.Stderr, "diagnostics\n")
		os.Exit(3)
	case "garbage":
		fmt.Println(`{"type":"system"}`)
		fmt.Println("not json")
	case "spawn": // start a grandchild in our process group, report its pid, hang
		child := exec.Command(os.Args[0])
		child.Env = []string{helperVar + "=sleep"}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"type": "child", "pid": child.Process.Pid})
		time.Sleep(time.Hour) // a child that hangs until it is killed: what the test kills
	case "sleep":
		time.Sleep(time.Hour) // a process that hangs until it is killed: what the test kills
	}
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestRunCLIArgsStdinEnvExit(t *testing.T) {
	t.Setenv("PNEUMA_LEAK_CHECK", "inherited") // must not reach the child
	env := claudetest.NewEnv(t, "http://127.0.0.1:9", claudetest.WithVar(helperVar, "echo"), claudetest.WithMaxRetries(2))
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := claudetest.RunCLI(t, ctx, self(t), dir, env, "line one\n", "-p", "a prompt with spaces; $(no shell)")

	if run.ExitCode != 3 || run.Killed || !strings.HasPrefix(run.Stderr, "diagnostics\n") {
		t.Errorf("exit %d, killed %t, stderr %q", run.ExitCode, run.Killed, run.Stderr)
	}
	if len(run.Lines) != 3 || run.Lines[2]["type"] != "tail" {
		t.Fatalf("lines = %v (a last line without newline counts)", run.Lines)
	}
	res := run.Result()
	if res == nil || len(run.OfType("system")) != 1 || len(run.OfType("nothing")) != 0 {
		t.Fatalf("Result/OfType on %v", run.Lines)
	}
	if got := fmt.Sprint(res["args"]); got != "[-p a prompt with spaces; $(no shell)]" || res["stdin"] != "line one\n" {
		t.Errorf("args %s, stdin %q", got, res["stdin"])
	}
	var got []string
	for _, v := range res["env"].([]any) {
		got = append(got, v.(string))
	}
	want := env.Environ()
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("child environment\n got %v\nwant %v", got, want)
	}
	for _, kv := range []string{
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9", "ANTHROPIC_API_KEY=" + env.APIKey, "HOME=" + env.Home,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_MAX_RETRIES=2",
	} {
		if !slices.Contains(got, kv) {
			t.Errorf("environment lacks %s", kv)
		}
	}
	if sandbox := slices.Contains(got, "IS_SANDBOX=1"); sandbox != (os.Geteuid() == 0) {
		t.Errorf("IS_SANDBOX=1 set: %t, running as root: %t", sandbox, os.Geteuid() == 0)
	}
	for _, kv := range got {
		if strings.HasPrefix(kv, "PNEUMA_LEAK_CHECK=") {
			t.Errorf("inherited variable reached the child: %s", kv)
		}
	}
	if !strings.HasPrefix(env.APIKey, "sk-test-") || env.ConfigDir != filepath.Join(env.Home, ".claude") {
		t.Errorf("env = %+v", env)
	}
}

func TestNewEnvOverrides(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "cfg")
	env := claudetest.NewEnv(t, "http://x", claudetest.WithVar("CLAUDE_CONFIG_DIR", cfg), claudetest.WithVar("DISABLE_TELEMETRY", ""))
	if env.ConfigDir != cfg || !slices.Contains(env.Vars, "CLAUDE_CONFIG_DIR="+cfg) {
		t.Errorf("ConfigDir %s, vars %v", env.ConfigDir, env.Vars)
	}
	for _, kv := range env.Vars {
		if strings.HasPrefix(kv, "DISABLE_TELEMETRY=") {
			t.Errorf("WithVar(k, \"\") did not remove %s", kv)
		}
	}
	other := claudetest.NewEnv(t, "http://x")
	if other.Home == env.Home || other.APIKey == env.APIKey {
		t.Error("two environments share a HOME or an API key")
	}
}

func TestRunCLIBadLineFailsTest(t *testing.T) {
	t.Parallel()
	env := claudetest.NewEnv(t, "http://x", claudetest.WithVar(helperVar, "garbage"))
	rec := &recorder{TB: t}
	run := claudetest.RunCLI(rec, context.Background(), self(t), t.TempDir(), env, "")
	if len(run.Lines) != 1 || len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "stdout line 2 is not a JSON object") {
		t.Errorf("lines %v, test errors %q", run.Lines, rec.errors)
	}
}

func TestRunCLIKillsProcessGroupAtContextEnd(t *testing.T) {
	t.Parallel()
	env := claudetest.NewEnv(t, "http://x", claudetest.WithVar(helperVar, "spawn"))
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	run := claudetest.RunCLI(t, ctx, self(t), t.TempDir(), env, "")
	if !run.Killed || run.ExitCode != -1 || time.Since(start) > 10*time.Second {
		t.Errorf("killed %t, exit %d after %v", run.Killed, run.ExitCode, time.Since(start))
	}
	children := run.OfType("child")
	if len(children) != 1 {
		t.Fatalf("lines %v, stderr %s", run.Lines, run.Stderr)
	}
	pid := int(children[0]["pid"].(float64))
	if !poll.Gone(t, pid, 5*time.Second) {
		t.Errorf("grandchild %d survived its process group", pid)
	}
}

func TestGitRepo(t *testing.T) {
	t.Parallel()
	dir := claudetest.GitRepo(t)
	if n := claudetest.Git(t, dir, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("commits = %s", n)
	}
	if b := claudetest.Git(t, dir, "branch", "--show-current"); b != "main" {
		t.Errorf("branch = %s", b)
	}
	if name := claudetest.Git(t, dir, "config", "--local", "user.name"); name == "" {
		t.Error("user.name not set locally")
	}
	if st := claudetest.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("status = %q", st)
	}
	if real, _ := filepath.EvalSymlinks(dir); real != dir {
		t.Errorf("GitRepo returned %s, not its realpath %s", dir, real)
	}
}

func TestTranscripts(t *testing.T) {
	t.Parallel()
	env := claudetest.NewEnv(t, "http://x")
	if got := claudetest.Transcripts(t, env); len(got) != 0 {
		t.Errorf("no projects dir: %v", got)
	}
	proj := filepath.Join(env.ConfigDir, "projects", "-tmp-x")
	files := []string{"s1.jsonl", "s1/subagents/agent-a1.jsonl", "s1/subagents/agent-a1.meta.json", "memory/notes.md"}
	for _, f := range files {
		p := filepath.Join(proj, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"type":"user"}`+"\n"+`{"type":"assistant"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := claudetest.Transcripts(t, env)
	want := []string{filepath.Join(proj, "s1.jsonl"), filepath.Join(proj, "s1/subagents/agent-a1.jsonl")}
	if !slices.Equal(got, want) {
		t.Errorf("Transcripts = %v, want %v", got, want)
	}
	if lines := claudetest.ReadJSONL(t, got[0]); len(lines) != 2 || lines[1]["type"] != "assistant" {
		t.Errorf("ReadJSONL = %v", lines)
	}
}

func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("Binary always skips in -short mode")
	}
	missing := filepath.Join(t.TempDir(), "no-claude")
	t.Setenv(claudetest.EnvVar, missing)

	t.Setenv("CI", "")
	rec := &recorder{TB: t}
	if got := claudetest.Binary(rec); got != "" || !strings.Contains(rec.skipped, "make claude") || len(rec.fatals) != 0 {
		t.Errorf("outside CI: path %q, skip %q, fatal %q", got, rec.skipped, rec.fatals)
	}
	t.Setenv("CI", "true")
	rec = &recorder{TB: t}
	if claudetest.Binary(rec); len(rec.fatals) != 1 || !strings.Contains(rec.fatals[0], "make claude") {
		t.Errorf("in CI: fatal %q, skip %q", rec.fatals, rec.skipped)
	}

	exe := self(t)
	t.Setenv(claudetest.EnvVar, exe)
	if got := claudetest.Binary(t); got != exe {
		t.Errorf("Binary = %q, want $%s = %q", got, claudetest.EnvVar, exe)
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	if got := claudetest.PrintArgs("hi", "--max-turns", "2"); !slices.Equal(got, []string{"-p", "hi", "--output-format", "stream-json", "--verbose", "--max-turns", "2"}) {
		t.Errorf("PrintArgs = %q", got)
	}
	if got := claudetest.StdinArgs("--x"); !slices.Equal(got, []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--x"}) {
		t.Errorf("StdinArgs = %q", got)
	}
	var m struct {
		Type    string
		Message struct{ Role, Content string }
	}
	line := claudetest.UserMessage("say \"hi\"\nplease")
	if !strings.HasSuffix(line, "}\n") || strings.Count(line, "\n") != 1 || json.Unmarshal([]byte(line), &m) != nil ||
		m.Type != "user" || m.Message.Role != "user" || m.Message.Content != "say \"hi\"\nplease" {
		t.Errorf("UserMessage = %q", line)
	}
}

// recorder is a testing.TB that records Errorf, Fatal and Skip instead of
// acting on them, to test helpers that fail or skip their test.
type recorder struct {
	testing.TB
	errors, fatals []string
	skipped        string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}
func (r *recorder) Skip(args ...any) { r.skipped = fmt.Sprint(args...) }

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"2.1.197", "2.1.332", -1}, {"2.1.332", "2.1.332", 0}, {"2.10.0", "2.9.9", 1}, {"2.1", "2.1.0", 0}, {"3.0.0", "2.99.99", 1}} {
		if got := claudetest.CompareVersions(c.a, c.b); got != c.want {
			t.Errorf("compare(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
