package jobfile

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "everything wrong at once",
			yaml: `version: 1
concurency: 4
jobs:
  - name: a
    prompt: do it
    max_turns: many
  - prompt: no name
  - name: a
    prompt: again
  - name: b
  - name: c
    prompt: x
    timeout: 30
    permission_mode: yolo
    commit: maybe
    promt: typo
`,
			want: []string{
				`jobs.yaml:2:1: unknown field "concurency" (did you mean "concurrency"?)`,
				`jobs.yaml:6:16: expected a whole number, got "many"`,
				`jobs.yaml:7:5: job 2 has no name`,
				`jobs.yaml:8:11: duplicate job name "a" (first at line 4)`,
				`jobs.yaml:10:5: job "b" has neither prompt nor prompt_file`,
				`jobs.yaml:13:14: duration "30" needs a unit, such as 30s`,
				`jobs.yaml:14:22: permission_mode "yolo" is not one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto`,
				`jobs.yaml:15:13: expected true or false, got "maybe"`,
				`jobs.yaml:16:5: unknown job field "promt" (did you mean "prompt"?)`,
			},
		},
		{
			name: "agents, effort and plugin_dirs",
			yaml: `version: 1
jobs:
  - name: a
    prompt: x
    effort: extreme
    agent: "-x"
    plugin_dirs: [""]
    agents:
      reviewer: {description: d, prompt: p, permissionMode: yolo}
      "bad name": {description: d, prompt: p}
      nodesc: {prompt: p}
      typo: {description: d, prompt: p, tool: [Read]}
`,
			want: []string{
				`jobs.yaml:5:13: effort "extreme" is not one of low, medium, high, xhigh, max`,
				`jobs.yaml:6:12: agent must name an agent, not "-x"`,
				`jobs.yaml:7:18: plugin_dirs[0] is empty`,
				`jobs.yaml:12:41: unknown field "tool" (did you mean "tools"?)`,
			},
		},
		{
			name: "agents checked",
			yaml: `version: 1
jobs:
  - name: a
    prompt: x
    agents:
      reviewer: {description: d, prompt: p, permissionMode: yolo}
      "bad name": {description: d, prompt: p}
      nodesc: {prompt: p}
`,
			want: []string{
				`jobs.yaml:6:7: agents: "bad name" is not an agent name (letters, digits, - and _)`,
				`jobs.yaml:6:7: agents.nodesc needs a description and a prompt`,
				`jobs.yaml:6:7: agents.reviewer.permissionMode "yolo" is not one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto`,
			},
		},
		{
			name: "missing version and jobs",
			yaml: "concurrency: 2\n",
			want: []string{
				`jobs.yaml:1:1: missing version (write "version: 1" at the top)`,
				`jobs.yaml:1:1: missing jobs (a list of jobs to run)`,
			},
		},
		{
			name: "wrong version",
			yaml: "version: 2\njobs:\n  - name: a\n    prompt: x\n",
			want: []string{`jobs.yaml:1:10: unsupported version 2 (this pneuma reads version 1)`},
		},
		{
			name: "jobs not a list",
			yaml: "version: 1\njobs:\n  a: b\n",
			want: []string{`jobs.yaml:3:3: jobs must be a list, not a mapping`},
		},
		{
			name: "duplicate key",
			yaml: "version: 1\njobs:\n  - name: a\n    prompt: x\n    prompt: y\n",
			want: []string{`jobs.yaml:5:5: duplicate field "prompt" (first at line 4)`},
		},
		{
			name: "prompt and prompt_file",
			yaml: "version: 1\njobs:\n  - name: a\n    prompt: x\n    prompt_file: p.md\n",
			want: []string{`jobs.yaml:3:5: job "a" sets more than one of prompt, prompt_file and prompts`},
		},
		{
			name: "syntax error",
			yaml: "version: 1\njobs:\n  - name: a\n    prompt: \"x\n",
			want: []string{`jobs.yaml:4:1: invalid YAML: found unexpected end of stream`},
		},
		{
			name: "empty file",
			yaml: "\n",
			want: []string{`jobs.yaml:1:1: jobs file is empty`},
		},
		{
			name: "name in defaults and negative numbers",
			yaml: "version: 1\ndefaults:\n  name: x\n  retries: -1\njobs:\n  - name: a\n    prompt: x\n    max_budget_usd: -2\n",
			want: []string{
				`jobs.yaml:3:3: defaults cannot set name`,
				`jobs.yaml:4:12: retries must not be negative`,
				`jobs.yaml:8:21: max_budget_usd must not be negative`,
			},
		},
		{
			name: "env must be a mapping",
			yaml: "version: 1\njobs:\n  - name: a\n    prompt: x\n    env: [A=1]\n",
			want: []string{`jobs.yaml:5:10: expected a mapping of names to strings, got a list`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("jobs.yaml", []byte(tt.yaml))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error = %v, want *DecodeError", err)
			}
			got := strings.Split(de.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestDecodeDefaults(t *testing.T) {
	f, err := Decode("jobs.yaml", []byte(`version: 1
concurrency: 3
defaults:
  model: sonnet
  max_turns: 10
  commit: false
  env: {A: "1", B: "2"}
  timeout: 90s
jobs:
  - name: a
    prompt: x
  - name: b
    prompt: y
    model: opus
    commit: true
    env: {B: "3", c: "4"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Concurrency != 3 || len(f.Jobs) != 2 {
		t.Fatalf("file = %+v", f)
	}
	a, b := f.Jobs[0], f.Jobs[1]
	if a.Model != "sonnet" || a.MaxTurns != 10 || a.Commit == nil || *a.Commit || a.Timeout.Std() != 90*time.Second {
		t.Errorf("job a did not inherit defaults: %+v", a)
	}
	if b.Model != "opus" || b.Commit == nil || !*b.Commit || b.MaxTurns != 10 {
		t.Errorf("job b's own values must win: %+v", b)
	}
	want := map[string]string{"A": "1", "B": "3", "c": "4"}
	if len(b.Env) != len(want) {
		t.Fatalf("env = %v, want %v", b.Env, want)
	}
	for k, v := range want {
		if b.Env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, b.Env[k], v)
		}
	}
	if len(a.Env) != 2 || a.Env["A"] != "1" {
		t.Errorf("job a env = %v", a.Env)
	}
}

func TestExampleJobsFileLoads(t *testing.T) {
	f, err := Read("../jobs.example.yaml")
	if err != nil {
		t.Fatalf("jobs.example.yaml: %v", err)
	}
	// Every job field appears in the example, so that it documents them all:
	// set, or shown commented out where setting it would change what the
	// demo's jobs do ("    # agent: fact-checker").
	seen := map[string]bool{}
	for _, j := range append(f.Jobs, f.Defaults) {
		for k := range j.set {
			seen[k] = true
		}
	}
	raw, err := os.ReadFile("../jobs.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range commentedField.FindAllSubmatch(raw, -1) {
		seen[string(m[1])] = true
	}
	for _, k := range jobFieldNames() {
		if !seen[k] {
			t.Errorf("jobs.example.yaml does not show job field %q", k)
		}
	}
}

// commentedField is a job field shown commented out in jobs.example.yaml.
var commentedField = regexp.MustCompile(`(?m)^    # ([a-z_]+):`)

func FuzzDecode(f *testing.F) {
	f.Add([]byte("version: 1\njobs:\n  - name: a\n    prompt: x\n"))
	f.Add([]byte("version: 1\ndefaults: {model: x, env: {A: b}}\njobs: [{name: a, prompts: [x, y], timeout: 1m}]\n"))
	f.Add([]byte("version: 1\njobs:\n  - &a {name: a, prompt: x}\n  - *a\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Add([]byte("version: 1\njobs:\n  - name: a\n    <<: {prompt: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode("f.yaml", data)
		if err == nil {
			if len(file.Jobs) == 0 {
				t.Fatal("decoded a file with no jobs")
			}
			for _, j := range file.Jobs {
				if j.Name == "" {
					t.Fatal("decoded a job with no name")
				}
			}
			return
		}
		var de *DecodeError
		if !errors.As(err, &de) || len(de.Problems) == 0 {
			t.Fatalf("error %v is not a DecodeError with problems", err)
		}
		for _, p := range de.Problems {
			if p.Pos.File != "f.yaml" || p.Msg == "" {
				t.Fatalf("problem without position or message: %+v", p)
			}
		}
	})
}
