package history_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	gold "github.com/pneuma-cli/pneuma/internal/testbed/golden"
)

// These tests run the real Claude Code CLI against the fake API and check
// that what the history package reads back from the transcripts it wrote
// equals the CLI's own accounting (result.total_cost_usd) to the cent, and
// that exports of those sessions read well (golden files, -update).

const runTimeout = 90 * time.Second

type bed struct {
	t   *testing.T
	bin string
	api *fakeapi.Server
	env *claudetest.Env
	dir string
}

func newBed(t *testing.T, h fakeapi.Handler) *bed {
	t.Helper()
	bin := claudetest.Binary(t)
	api := fakeapi.New(t, h)
	return &bed{t: t, bin: bin, api: api, env: claudetest.NewEnv(t, api.URL, claudetest.WithMaxRetries(1)), dir: claudetest.GitRepo(t)}
}

// run runs one headless CLI turn and returns its result line.
func (b *bed) run(prompt string, extra ...string) map[string]any {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r := claudetest.RunCLI(b.t, ctx, b.bin, b.dir, b.env, "", claudetest.PrintArgs(prompt, extra...)...)
	res := r.Result()
	if res == nil {
		b.t.Fatalf("no result line; exit %d; stderr %s", r.ExitCode, r.Stderr)
	}
	return res
}

// cumulative reports whether the CLI's total_cost_usd of a --resume run is
// the session's running total (restored from the transcript's cost-state
// entry, 2.1.332) rather than the process's own (2.1.197).
func (b *bed) cumulative() bool { return claudetest.AtLeast(b.t, b.bin, "2.1.332") }

func cost(res map[string]any) float64 { c, _ := res["total_cost_usd"].(float64); return c }
func sid(res map[string]any) string   { s, _ := res["session_id"].(string); return s }

// sameCents fails unless got and want agree to the cent (they agree to far
// more in practice; the assertion is the promise).
func sameCents(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Round(got*100) != math.Round(want*100) || math.Abs(got-want) > 1e-6 {
		t.Errorf("%s: history says $%.6f, the CLI $%.6f", what, got, want)
	}
}

// session is one scenario's outcome: the sessions it made and what the CLI
// billed for each.
type scenario struct {
	name string
	// play runs the CLI and returns session id → the CLI's total cost.
	play func(t *testing.T, b *bed) map[string]float64
	// handler answers the scenario's API calls (given the bed's directory).
	handler func(dir string) fakeapi.Handler
	// golden names the session to export as a golden file ("" for none):
	// the last session played.
	golden bool
	// flags are the flags `history usage` must give its sessions.
	flags []string
}

var usage1 = fakeapi.Usage{Input: 1200, Output: 80, CacheRead: 5000, CacheWrite: 300}

var scenarios = []scenario{
	{
		name: "text",
		handler: func(string) fakeapi.Handler {
			return fakeapi.Sequence(fakeapi.Text("Hello from the fake API.").WithUsage(usage1))
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			res := b.run("Say hello.")
			return map[string]float64{sid(res): cost(res)}
		},
		golden: true,
	},
	{
		name: "tools",
		handler: func(string) fakeapi.Handler {
			return fakeapi.Sequence(
				fakeapi.ToolUse(fakeapi.Bash("echo one")).WithText("Running a command.").WithUsage(fakeapi.Usage{Input: 300, Output: 40, CacheWrite: 1000}),
				// Two tools at once; the CLI records their results as they finish,
				// so the slower one goes second whatever the machine load.
				fakeapi.ToolUse(fakeapi.Bash("sleep 2; echo two"), fakeapi.Bash("echo three")).WithUsage(fakeapi.Usage{Input: 50, Output: 60, CacheRead: 1000}),
				fakeapi.Text("All three commands ran.").WithUsage(fakeapi.Usage{Input: 70, Output: 12, CacheRead: 1300}),
			)
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			res := b.run("Run some commands.", "--permission-mode", "bypassPermissions", "--max-turns", "6")
			return map[string]float64{sid(res): cost(res)}
		},
		golden: true,
	},
	{
		name: "subagent",
		handler: func(string) fakeapi.Handler {
			// From 2.1.332 on the subagent runs in the background: the main
			// thread answers the launch, then the task notification.
			main := func(r *fakeapi.Request) fakeapi.Response {
				if _, ok := r.TaskNotification(); ok {
					return fakeapi.Text("The subagent reported back.").WithUsage(fakeapi.Usage{Input: 150, Output: 15})
				}
				if !r.HasToolResult() {
					return fakeapi.ToolUse(fakeapi.Agent("count files", "SUBTASK: run a command and report"))
				}
				if fakeapi.AsyncAgentLaunched(r.ToolResults()[0]) {
					return fakeapi.Text("The subagent is at work.")
				}
				return fakeapi.Text("The subagent reported back.")
			}
			sub := fakeapi.Turns(
				fakeapi.ToolUse(fakeapi.Bash("echo from-subagent")).WithUsage(fakeapi.Usage{Input: 400, Output: 30}),
				fakeapi.Text("subagent report").WithUsage(fakeapi.Usage{Input: 500, Output: 10}),
			)
			return fakeapi.Route(main, sub)
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			res := b.run("Delegate.", "--permission-mode", "bypassPermissions", "--max-turns", "6")
			return map[string]float64{sid(res): cost(res)}
		},
		golden: true,
	},
	{
		// CLI 2.1.332's Workflow tool runs a script whose agent() calls are
		// subagents: their transcripts are under
		// <sid>/subagents/workflows/<runId>/ and fold into the session.
		name: "workflow",
		handler: func(string) fakeapi.Handler {
			return func(r *fakeapi.Request) fakeapi.Response {
				switch {
				case r.IsSubagent():
					return fakeapi.Text("workflow agent report").WithUsage(fakeapi.Usage{Input: 400, Output: 30})
				case !r.HasTool("Workflow"):
					return fakeapi.Text("this CLI has no Workflow tool")
				case r.IsPrompt():
					return fakeapi.ToolUse(fakeapi.Tool("Workflow", map[string]any{"script": workflowScript})).WithUsage(fakeapi.Usage{Input: 300, Output: 40})
				}
				return fakeapi.Text("The workflow ran.").WithUsage(fakeapi.Usage{Input: 150, Output: 15})
			}
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			if !claudetest.AtLeast(t, b.bin, "2.1.332") {
				t.Skip("CLI " + claudetest.PinnedVersion(t, b.bin) + " has no Workflow tool")
			}
			res := b.run("Run a workflow.", "--permission-mode", "bypassPermissions", "--max-turns", "6")
			id := sid(res)
			path, err := history.SessionPath(b.env.ConfigDir, b.dir, id)
			if err != nil {
				t.Fatal(err)
			}
			agents, _ := filepath.Glob(filepath.Join(history.SessionDir(path), "subagents", "workflows", "*", "agent-*.jsonl"))
			if len(agents) != 2 {
				t.Fatalf("workflow agent transcripts %v, want 2 under <sid>/subagents/workflows/<run>/", agents)
			}
			corpus, err := history.Scan(context.Background(), b.env.ConfigDir, history.ScanOptions{Summary: true})
			if err != nil {
				t.Fatal(err)
			}
			if ss := corpus.Sessions(); len(ss) != 1 || ss[0].Subagents != 2 || ss[0].Prompts != 1 {
				t.Errorf("sessions %+v, want one with 2 subagents and 1 prompt (the task notification is none)", ss)
			}
			return map[string]float64{id: cost(res)}
		},
		golden: true,
	},
	{
		name: "resume-and-fork",
		handler: func(string) fakeapi.Handler {
			return fakeapi.Sequence(
				fakeapi.Text("First answer.").WithUsage(fakeapi.Usage{Input: 1000, Output: 100}),
				fakeapi.Text("Second answer, same session.").WithUsage(fakeapi.Usage{Input: 2000, Output: 50, CacheRead: 900}),
				// The model is the one --model sonnet resolves to.
				fakeapi.Text("Answer in the fork.").WithUsage(fakeapi.Usage{Input: 3000, Output: 70}),
			)
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			first := b.run("First question.")
			s := sid(first)
			second := b.run("Second question.", "--resume", s)
			if sid(second) != s {
				t.Fatalf("resume changed the session id: %s → %s", s, sid(second))
			}
			fork := b.run("Fork question.", "--resume", s, "--fork-session", "--model", "sonnet")
			if sid(fork) == s {
				t.Fatal("fork kept the session id")
			}
			// Up to 2.1.197 each -p process reports its own total: the
			// resumed session is billed for both runs, the fork only for its
			// own call. From 2.1.332 on a resumed process reports the
			// session's running total, and a fork starts from its parent's.
			if b.cumulative() {
				return map[string]float64{s: cost(second), sid(fork): cost(fork) - cost(second)}
			}
			return map[string]float64{s: cost(first) + cost(second), sid(fork): cost(fork)}
		},
		golden: true,
	},
	{
		// A /compact between two prompts: the export marks where the
		// conversation was compacted (trigger, size before) and shows the
		// CLI's summary as a summary, not as a prompt. The summary call is
		// billed by the CLI but not written to the transcript, so history
		// counts the rest and flags the session.
		name: "compaction",
		handler: func(string) fakeapi.Handler {
			return func(r *fakeapi.Request) fakeapi.Response {
				switch tx := strings.TrimSpace(r.Text()); {
				case strings.HasSuffix(tx, "Say something."):
					return fakeapi.Text("Before compaction.").WithUsage(fakeapi.Usage{Input: 1000, Output: 100})
				case strings.HasSuffix(tx, "Say more."):
					return fakeapi.Text("Still before compaction.").WithUsage(fakeapi.Usage{Input: 1500, Output: 100})
				case strings.HasSuffix(tx, "After the compaction."):
					return fakeapi.Text("Answer after the compaction.").WithUsage(fakeapi.Usage{Input: 800, Output: 60})
				}
				// The summary call; 2.1.332 asks again unless it gets an
				// analysis and a summary block.
				return fakeapi.Text("<analysis>Short.</analysis>\n<summary>Summary of the conversation.</summary>").WithUsage(fakeapi.Usage{Input: 700, Output: 60})
			}
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			// 2.1.197 compacts no fewer than two exchanges.
			first := b.run("Say something.")
			second := b.run("Say more.", "--resume", sid(first))
			compact := b.run("/compact", "--resume", sid(first))
			if cost(compact) == 0 {
				t.Fatalf("the /compact run billed nothing: %v", compact)
			}
			after := b.run("After the compaction.", "--resume", sid(first))
			if b.cumulative() { // the running total, less what the /compact run added
				return map[string]float64{sid(first): cost(after) - (cost(compact) - cost(second))}
			}
			return map[string]float64{sid(first): cost(first) + cost(second) + cost(after)}
		},
		golden: true,
		flags:  []string{history.FlagCompacted},
	},
	{
		name: "max-turns",
		handler: func(string) fakeapi.Handler {
			return func(*fakeapi.Request) fakeapi.Response {
				return fakeapi.ToolUse(fakeapi.Bash("echo again")).WithUsage(fakeapi.Usage{Input: 111, Output: 22})
			}
		},
		play: func(t *testing.T, b *bed) map[string]float64 {
			res := b.run("Loop for ever.", "--permission-mode", "bypassPermissions", "--max-turns", "2")
			if res["subtype"] != "error_max_turns" {
				t.Fatalf("subtype %v, want error_max_turns", res["subtype"])
			}
			return map[string]float64{sid(res): cost(res)}
		},
	},
}

// workflowScript runs two agents one after the other, so their order in an
// export is fixed.
const workflowScript = "export const meta = { name: 'probe', description: 'two agents in turn', phases: [{ title: 'Work' }] }\n" +
	"const a = await agent('WORKFLOW-AGENT-ONE: report', { description: 'first' })\n" +
	"const b = await agent('WORKFLOW-AGENT-TWO: report', { description: 'second' })\n" +
	"return a + ' / ' + b\n"

func TestEndToEndCostsAndExports(t *testing.T) {
	var mu sync.Mutex
	exports := map[string]string{} // golden name → session file
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			b := newBed(t, nil)
			b.api.SetHandler(sc.handler(b.dir))
			billed := sc.play(t, b)
			ctx := context.Background()

			corpus, err := history.Scan(ctx, b.env.ConfigDir, history.ScanOptions{Summary: true})
			if err != nil {
				t.Fatal(err)
			}
			rows := map[string]history.UsageRow{}
			for _, r := range corpus.UsageBy(history.BySession, time.UTC) {
				rows[r.SessionID] = r
			}
			var last string
			for id, want := range billed {
				sameCents(t, "usage --by session "+id, rows[id].CostUSD, want)
				if rows[id].UnpricedCalls > 0 || !slices.Equal(rows[id].Flags, sc.flags) {
					t.Errorf("session %s: unpriced %d, flags %v", id, rows[id].UnpricedCalls, rows[id].Flags)
				}
				path, err := history.SessionPath(b.env.ConfigDir, b.dir, id)
				if err != nil {
					t.Fatal(err)
				}
				if history.FileCwd(path) != b.dir {
					t.Errorf("session file %s records cwd %q, want %q", path, history.FileCwd(path), b.dir)
				}
				if !strings.Contains(path, history.ProjectDirName(b.dir)) {
					t.Errorf("session file %s is not under %s", path, history.ProjectDirName(b.dir))
				}
				last = path
			}
			if len(billed) == 1 {
				// TranscriptUsage (the runner's fallback) agrees for a
				// session that was never forked.
				tot, err := history.TranscriptUsage(ctx, last, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, want := range billed {
					sameCents(t, "TranscriptUsage", tot.CostUSD, want)
				}
			}
			if sc.golden {
				// The fork is the last session played; export the session
				// with the most history (the resumed one) for resume-and-fork.
				for id := range billed {
					if p, _ := history.SessionPath(b.env.ConfigDir, b.dir, id); p != "" && (sc.name != "resume-and-fork" || len(billed) == 2 && !isFork(p)) {
						mu.Lock()
						exports[sc.name] = p
						mu.Unlock()
						checkExports(t, sc.name, p, b)
					}
				}
			}
		})
	}
}

// TestEndToEndCompactionIsFlagged: the /compact summary call is billed but
// not written to the transcript (reference 4.5), so history reports less than
// the CLI by exactly that call, and flags the session.
func TestEndToEndCompactionIsFlagged(t *testing.T) {
	t.Parallel()
	b := newBed(t, fakeapi.Sequence(
		fakeapi.Text("Before compaction.").WithUsage(fakeapi.Usage{Input: 1000, Output: 100}),
		fakeapi.Text("Still before compaction.").WithUsage(fakeapi.Usage{Input: 1500, Output: 100}),
		fakeapi.Text("Summary of the conversation.").WithUsage(fakeapi.Usage{Input: 700, Output: 60}),
		fakeapi.Text("Second prompt answer.").WithUsage(fakeapi.Usage{Input: 800, Output: 60}),
	))
	first := b.run("Say something.")
	second := b.run("Say more.", "--resume", sid(first))
	compact := b.run("/compact", "--resume", sid(first))
	if cost(compact) == 0 {
		t.Fatalf("the /compact run billed nothing: %v", compact)
	}
	after := b.run("After the compaction.", "--resume", sid(first))
	// Without Summary, as `history usage` scans.
	corpus, err := history.Scan(context.Background(), b.env.ConfigDir, history.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rows := corpus.UsageBy(history.BySession, time.UTC)
	if len(rows) != 1 {
		t.Fatalf("rows %+v", rows)
	}
	want := cost(first) + cost(second) + cost(after)
	if b.cumulative() { // the running total, less what the /compact run added
		want = cost(after) - (cost(compact) - cost(second))
	}
	sameCents(t, "compacted session (without the summary call)", rows[0].CostUSD, want)
	if !slices.Contains(rows[0].Flags, history.FlagCompacted) {
		t.Errorf("flags %v, want %q", rows[0].Flags, history.FlagCompacted)
	}
}

func isFork(path string) bool {
	data, err := os.ReadFile(path)
	return err == nil && bytes.HasPrefix(data, []byte(`{"type":"mode"`))
}

// volatile matches what changes from run to run: ids, times, paths.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UUID"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?( UTC|Z)?`), "TIMESTAMP"},
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`), "HH:MM:SS"},
	{regexp.MustCompile(`\b(msg|req|toolu)_[A-Za-z0-9_]+`), "${1}_ID"},
	{regexp.MustCompile(`\b[0-9a-f]{17}\b`), "AGENTID"},
	{regexp.MustCompile(`duration_ms: \d+`), "duration_ms: N"},
	{regexp.MustCompile(`(duration_ms(?:>|&gt;))\d+`), "${1}N"},
	// 2.1.332's background task output files: /tmp/claude-UID/<project>/…
	{regexp.MustCompile(`/tmp/claude-\d+/[^/\s]+/`), "TMP/claude-UID/PROJECT/"},
	{regexp.MustCompile(`sk-test-[a-z0-9]+`), "sk-test-KEY"},
	// 2.1.332's workflow runs and background tasks.
	{regexp.MustCompile(`\bwf_[0-9a-f]{8}-[0-9a-f]+`), "wf_RUNID"},
	{regexp.MustCompile(`(Task ID: |task-id(?:>|&gt;)|tasks/)[a-z0-9]{9}\b`), "${1}TASKID"},
}

func checkExports(t *testing.T, name, path string, b *bed) {
	t.Helper()
	for _, f := range []history.Format{history.FormatMarkdown, history.FormatHTML, history.FormatText, history.FormatJSON} {
		var buf bytes.Buffer
		if err := history.Export(context.Background(), &buf, path, history.ExportOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, b.env.APIKey) {
			t.Errorf("%s export holds the API key", f)
		}
		out = strings.ReplaceAll(out, path, "SESSION.jsonl")
		out = strings.ReplaceAll(out, b.env.Home, "HOME")
		out = strings.ReplaceAll(out, b.dir, "REPO")
		out = strings.ReplaceAll(out, history.ProjectDirName(b.dir), "PROJECTDIR")
		for _, v := range volatile {
			out = v.re.ReplaceAllString(out, v.repl)
		}
		if f == history.FormatJSON {
			continue // ids and timestamps are most of it; shape is checked in unit tests
		}
		// One set per pinned CLI: what each writes differs.
		golden(t, filepath.Join("e2e", claudetest.PinnedVersion(t, b.bin), name+"."+string(f)), []byte(out))
	}
}

// golden compares got with testdata/golden/name (go test -update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	gold.Check(t, "golden/"+name, got)
}
