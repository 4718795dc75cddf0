package cmd

import (
	"bytes"
	"errors"
	"fmt"
	goio "io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// runFlags are the flags of `pneuma run` the examples and the docs rely on,
// listed in one place. While `run` has none of them (its command not written
// yet) the examples test tolerates them; once it has one, each must exist.
var runFlags = []string{
	"concurrency", "j", "shard", "report", "junit", "summary", "json", "quiet", "keep-worktrees",
	"only", "fail-fast", "dry-run", "claude", "budget-usd", "output-dir", "pool",
}

// lookupFlag finds a flag of c by long name or one-letter shorthand.
func lookupFlag(c *cobra.Command, name string) bool {
	if len(name) == 1 {
		return c.Flags().ShorthandLookup(name) != nil || c.InheritedFlags().ShorthandLookup(name) != nil
	}
	return c.Flags().Lookup(name) != nil || c.InheritedFlags().Lookup(name) != nil
}

func TestRunHasEveryListedFlag(t *testing.T) {
	root := NewRootCmd(&IO{In: strings.NewReader(""), Out: goio.Discard, ErrOut: goio.Discard, Getenv: func(string) string { return "" }})
	run, _, _ := root.Find([]string{"run"})
	for _, f := range runFlags {
		if !lookupFlag(run, f) {
			t.Errorf("pneuma run has no --%s flag, which the examples use", f)
		}
	}
}

// invocation is one `pneuma ...` command line found in an example.
type invocation struct {
	where string
	args  []string // after "pneuma"
}

// exprRE matches a GitHub Actions expression, which may contain spaces.
var exprRE = regexp.MustCompile(`\$\{\{[^}]*\}\}`)

// shellWords splits one shell command line into words, honouring quotes and
// stopping at nothing: operators come out as words of their own.
func shellWords(line string) []string {
	line = exprRE.ReplaceAllStringFunc(line, func(s string) string { return strings.ReplaceAll(s, " ", "") })
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// shellOperators end a simple command.
var shellOperators = map[string]bool{"&&": true, "||": true, ";": true, "|": true, ">": true, ">>": true, "2>&1": true, "<": true}

// pneumaInScript finds the pneuma commands in a shell script.
func pneumaInScript(where, script string) []invocation {
	script = strings.ReplaceAll(script, "\\\n", " ")
	var found []invocation
	for _, line := range strings.Split(script, "\n") {
		words := shellWords(line)
		for i, w := range words {
			if w != "pneuma" || (i > 0 && !shellOperators[words[i-1]] && words[i-1] != "exec" && words[i-1] != "then" && words[i-1] != "do") {
				continue
			}
			var args []string
			for _, a := range words[i+1:] {
				if shellOperators[a] || strings.HasSuffix(a, ";") {
					break
				}
				args = append(args, a)
			}
			found = append(found, invocation{where: where, args: args})
		}
	}
	return found
}

// shellKeys hold shell scripts: GitHub's run, GitLab's scripts, and a
// container's command and args (for `sh -c`).
var shellKeys = map[string]bool{"run": true, "script": true, "before_script": true, "after_script": true, "command": true, "args": true}

// collectInvocations walks a YAML document for pneuma command lines: in the
// scripts under shellKeys and in a container's command + args arrays
// (Kubernetes). shell says n is under one of shellKeys.
func collectInvocations(n *yaml.Node, where string, shell bool, out *[]invocation) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			collectInvocations(c, where, shell, out)
		}
	case yaml.MappingNode:
		var argv []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if (k.Value == "command" || k.Value == "args") && v.Kind == yaml.SequenceNode {
				for _, s := range v.Content {
					argv = append(argv, s.Value)
				}
			}
		}
		if len(argv) > 0 && argv[0] == "pneuma" {
			*out = append(*out, invocation{where: fmt.Sprintf("%s:%d", where, n.Line), args: argv[1:]})
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			collectInvocations(n.Content[i+1], where, shellKeys[n.Content[i].Value], out)
		}
	case yaml.ScalarNode:
		if shell && strings.Contains(n.Value, "pneuma ") {
			*out = append(*out, pneumaInScript(fmt.Sprintf("%s:%d", where, n.Line), n.Value)...)
		}
	}
}

// loadExample parses every YAML document of an example file.
func loadExample(t *testing.T, path string) []*yaml.Node {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, goio.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, &doc)
	}
	if len(docs) == 0 {
		t.Fatalf("%s holds no YAML document", path)
	}
	return docs
}

// wantCalls is how many pneuma commands each example holds, so a change that
// hides one from the checks below is noticed.
var wantCalls = map[string]int{
	"github-actions.yml":          1, // the shards run pneuma through its action (TestGitHubExampleShardsAgree)
	"gitlab-ci.yml":               3,
	"kubernetes-indexed-job.yaml": 1,
	"kubernetes-merge-job.yaml":   1,
}

// TestExamples checks every example in examples/: the YAML parses, and every
// pneuma command in it names an existing command and existing flags.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.y*ml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found %d examples, want the GitHub, GitLab and Kubernetes ones: %v", len(files), files)
	}
	root := NewRootCmd(&IO{In: strings.NewReader(""), Out: goio.Discard, ErrOut: goio.Discard, Getenv: func(string) string { return "" }})
	const runWritten = true
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var calls []invocation
			for _, doc := range loadExample(t, path) {
				collectInvocations(doc, filepath.Base(path), false, &calls)
			}
			if want := wantCalls[filepath.Base(path)]; len(calls) != want {
				t.Errorf("found %d pneuma commands, want %d (update wantCalls when an example changes): %+v", len(calls), want, calls)
			}
			for _, call := range calls {
				for _, p := range checkInvocation(root, runWritten, call) {
					t.Error(p)
				}
			}
		})
	}
}

// checkInvocation returns what is wrong with one pneuma command line.
func checkInvocation(root *cobra.Command, runWritten bool, call invocation) []string {
	var problems []string
	c, rest, err := root.Find(call.args)
	if err != nil || c == root {
		return []string{fmt.Sprintf("%s: pneuma %s: no such command", call.where, strings.Join(call.args, " "))}
	}
	if !c.Runnable() {
		problems = append(problems, fmt.Sprintf("%s: %q is not a runnable command", call.where, c.CommandPath()))
	}
	for _, a := range rest {
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") && len(name) > 1 {
			name = name[:1] // -j4
		}
		if lookupFlag(c, name) {
			continue
		}
		if c.Name() == "run" && !runWritten && slices.Contains(runFlags, name) {
			continue // the run command is not written yet; runFlags lists it
		}
		problems = append(problems, fmt.Sprintf("%s: %s has no flag %s", call.where, c.CommandPath(), a))
	}
	return problems
}

func TestCheckInvocationCatchesMistakes(t *testing.T) {
	root := NewRootCmd(&IO{In: strings.NewReader(""), Out: goio.Discard, ErrOut: goio.Discard, Getenv: func(string) string { return "" }})
	script := `set -e
pneuma report merge a.json b.json -o out.json --junit j.xml && pneuma report show out.json | tee log
echo pneuma is not a command here
pneuma report merge x.json --no-such-flag
pneuma repot show x.json
pneuma report show --format=junit -X x.json`
	calls := pneumaInScript("script", script)
	if len(calls) != 5 {
		t.Fatalf("found %d pneuma commands, want 5: %+v", len(calls), calls)
	}
	want := [][]string{nil, nil, {"has no flag --no-such-flag"}, {"no such command"}, {"has no flag -X"}}
	for i, call := range calls {
		got := checkInvocation(root, true, call)
		if len(got) != len(want[i]) {
			t.Errorf("pneuma %v: problems %q, want %q", call.args, got, want[i])
			continue
		}
		for k := range got {
			if !strings.Contains(got[k], want[i][k]) {
				t.Errorf("pneuma %v: problem %q, want %q", call.args, got[k], want[i][k])
			}
		}
	}
	if got := checkInvocation(root, true, invocation{args: []string{"run", "--concurrency", "2", "--no-such-run-flag", "jobs.yaml"}}); len(got) != 1 {
		t.Errorf("an unknown run flag was not caught: %q", got)
	}
}

// exampleDocs decodes every document of an example loosely for the
// consistency checks below.
func exampleDocs(t *testing.T, name string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range loadExample(t, filepath.Join("..", "examples", name)) {
		var m map[string]any
		if err := doc.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestGitHubExampleShardsAgree checks the matrix lists shards 1..N, the
// pneuma step (the action's shard input, or a run step's --shard) runs
// ${{ matrix.shard }}/N, and the merge job writes the step summary.
func TestGitHubExampleShardsAgree(t *testing.T) {
	wf := exampleDocs(t, "github-actions.yml")[0]
	jobs := wf["jobs"].(map[string]any)
	shard := jobs["shard"].(map[string]any)
	list := shard["strategy"].(map[string]any)["matrix"].(map[string]any)["shard"].([]any)
	for i, v := range list {
		if v != i+1 {
			t.Fatalf("matrix.shard is %v, want 1..N", list)
		}
	}
	var shards []string // the shard each pneuma step runs, from its action's input or flag
	root := NewRootCmd(&IO{In: strings.NewReader(""), Out: goio.Discard, ErrOut: goio.Discard, Getenv: func(string) string { return "" }})
	for _, s := range shard["steps"].([]any) {
		step := s.(map[string]any)
		if r, ok := step["run"].(string); ok && strings.Contains(r, "--shard ") {
			shards = append(shards, strings.Fields(r[strings.Index(r, "--shard "):])[1])
		}
		if uses, _ := step["uses"].(string); strings.HasPrefix(uses, "pneuma-cli/pneuma@") {
			with, _ := step["with"].(map[string]any)
			if sh, _ := with["shard"].(string); sh != "" {
				shards = append(shards, sh)
			}
			if extra, _ := with["args"].(string); extra != "" {
				for _, p := range checkInvocation(root, true, invocation{where: "github-actions.yml action args", args: append([]string{"run"}, strings.Fields(extra)...)}) {
					t.Error(p)
				}
			}
		}
	}
	want := fmt.Sprintf("${{ matrix.shard }}/%d", len(list))
	if len(shards) != 1 || shards[0] != want {
		t.Errorf("the shard job runs shards %q, want one step running %q", shards, want)
	}
	merge := jobs["merge"].(map[string]any)
	if merge["needs"] != "shard" || merge["if"] != "always()" {
		t.Errorf("merge job needs=%v if=%v, want needs: shard and if: always()", merge["needs"], merge["if"])
	}
	var mergeRuns []string
	for _, s := range merge["steps"].([]any) {
		if r, ok := s.(map[string]any)["run"].(string); ok {
			mergeRuns = append(mergeRuns, r)
		}
	}
	if !slices.ContainsFunc(mergeRuns, func(r string) bool {
		return strings.Contains(r, "pneuma report merge") && strings.Contains(r, `--summary "$GITHUB_STEP_SUMMARY"`) && strings.Contains(r, "--junit")
	}) {
		t.Errorf("merge job does not merge into the step summary and JUnit: %q", mergeRuns)
	}
}

// TestGitLabExampleIsParallel checks the agents job runs in parallel and a
// later job merges what it uploads.
func TestGitLabExampleIsParallel(t *testing.T) {
	ci := exampleDocs(t, "gitlab-ci.yml")[0]
	job := ci["pneuma"].(map[string]any)
	if n, ok := job["parallel"].(int); !ok || n < 2 {
		t.Errorf("pneuma job has parallel: %v, want a number of at least 2", job["parallel"])
	}
	paths := job["artifacts"].(map[string]any)["paths"].([]any)
	if !slices.Contains(paths, any("report-*.json")) {
		t.Errorf("pneuma job does not upload its reports: %v", paths)
	}
	merge := ci["pneuma-report"].(map[string]any)
	if !strings.Contains(fmt.Sprint(merge["script"]), "pneuma report merge report-*.json") {
		t.Errorf("pneuma-report does not merge the reports: %v", merge["script"])
	}
}

// TestKubernetesExampleTotalsAgree checks the Indexed Job's completions
// equal the PNEUMA_SHARD_TOTAL its pods read.
func TestKubernetesExampleTotalsAgree(t *testing.T) {
	var job map[string]any
	for _, d := range exampleDocs(t, "kubernetes-indexed-job.yaml") {
		if d["kind"] == "Job" {
			job = d
		}
	}
	if job == nil {
		t.Fatal("no Job")
	}
	spec := job["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" {
		t.Errorf("completionMode %v, want Indexed", spec["completionMode"])
	}
	completions := spec["completions"].(int)
	containers := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	found := false
	for _, c := range containers {
		for _, e := range c.(map[string]any)["env"].([]any) {
			e := e.(map[string]any)
			if e["name"] == "PNEUMA_SHARD_TOTAL" {
				found = true
				if n, err := strconv.Atoi(fmt.Sprint(e["value"])); err != nil || n != completions {
					t.Errorf("PNEUMA_SHARD_TOTAL is %v but completions is %d", e["value"], completions)
				}
			}
		}
	}
	if !found {
		t.Error("no container sets PNEUMA_SHARD_TOTAL")
	}
}
