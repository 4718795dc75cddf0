package jobfile

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeSession(t *testing.T) {
	spec, err := DecodeSession([]byte(`{"name":"fix","repo":"r","base":"main","model":"sonnet","permission_mode":"acceptEdits",
		"policy":{"deny":["Bash(rm:*)"]},"permission_prompt":"client","permission_timeout":"30s","env":{"A":"1"},"timeout":"10m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Job.Name != "fix" || spec.Job.Repo != "r" || spec.Job.Model != "sonnet" || spec.Job.Policy == nil ||
		spec.PermissionPrompt != "client" || spec.PermissionWait() != 30*time.Second || spec.Job.Timeout.Std() != 10*time.Minute {
		t.Fatalf("decoded %+v", spec)
	}
	spec, err = DecodeSession([]byte(`{"fork_session":true,"resume":"8f0e","effort":"low","include_hook_events":true}`))
	if err != nil || !spec.ForkSession || spec.Resume != "8f0e" || spec.Job.Effort != "low" || !spec.Job.IncludeHookEvents {
		t.Fatalf("decoded %+v, %v", spec, err)
	}
	if (&Session{}).PermissionWait() != DefaultPermissionTimeout {
		t.Fatal("default permission timeout")
	}
}

// Every problem at once, each with its field path.
func TestDecodeSessionProblems(t *testing.T) {
	tests := []struct {
		body string
		want []string
	}{
		{``, []string{"(body): the request body is empty"}},
		{`{"repo":`, []string{"(body): the request body is not valid JSON"}},
		{`[1]`, []string{"a session request must be a JSON object, not a list"}},
		{`{"repo":"r","modle":"x","prompt":"hi","verify":{"command":["x"]}}`, []string{
			`modle: unknown field "modle" (did you mean "model"?)`,
			"prompt: a session takes no prompt",
			"verify: a session does not verify",
		}},
		// Every job field a session cannot honour is refused by name.
		{`{"retries":1,"expect":{"changes":true},"output_schema":{"type":"object"},"push":true,"pull_request":{},"prompts":["a"]}`, []string{
			"retries: a session does not retry a turn",
			"expect: a session has no end",
			"output_schema: a session's turns are a conversation",
			"push: a server session does not publish",
			"pull_request: a server session does not publish",
			"prompts: a session takes no prompts",
		}},
		{`{"max_turns":"many","permission_mode":"yolo","policy":{"alow":["Read"]},"permission_prompt":"server","permission_timeout":"5"}`, []string{
			"max_turns: ",
			`permission_mode: permission_mode "yolo" is not one of`,
			`policy.alow: unknown field "alow"`,
			`permission_prompt: permission_prompt must be "client"`,
			"permission_timeout: duration \"5\" needs a unit",
		}},
		{`{"add_dirs":["a",3,{"x":1}]}`, []string{"add_dirs"}},
		{`{"fork_session":true,"effort":"huge","agents":{"r":{"description":"d"}}}`, []string{
			"fork_session: fork_session forks the session named by resume; set resume",
			`effort: effort "huge" is not one of`,
			"agents: agents.r needs a description and a prompt",
		}},
	}
	for _, tt := range tests {
		_, err := DecodeSession([]byte(tt.body))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%s: err = %v, want a *DecodeError", tt.body, err)
		}
		msg := err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s:\n%s\nmissing %q", tt.body, msg, w)
			}
		}
		if len(de.Problems) < len(tt.want) {
			t.Errorf("%s: %d problems, want at least %d:\n%s", tt.body, len(de.Problems), len(tt.want), msg)
		}
	}
}

func FuzzDecodeSession(f *testing.F) {
	f.Add([]byte(`{"repo":"r","policy":{"allow":["Read"]},"permission_prompt":"client"}`))
	f.Add([]byte(`{"env":{"A":"1"},"timeout":"1m","add_dirs":["x"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSession(data)
		if err == nil && spec == nil {
			t.Fatal("nil spec without an error")
		}
		var de *DecodeError
		if err != nil && (!errors.As(err, &de) || len(de.Problems) == 0) {
			t.Fatalf("error %v is not a *DecodeError with problems", err)
		}
	})
}

// Every field of a job is decided for sessions: honoured (sessionJobFields)
// or refused with a reason (sessionRefused). A new job field fails here
// until it is put in one of them (and in docs/serve.md's table).
func TestEveryJobFieldDecidedForSessions(t *testing.T) {
	honoured := map[string]bool{}
	for _, f := range sessionJobFields {
		honoured[f] = true
		if sessionRefused[f] != "" {
			t.Errorf("%s is both honoured and refused", f)
		}
	}
	typ := reflect.TypeOf(Job{})
	for i := range typ.NumField() {
		tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		if !honoured[tag] && sessionRefused[tag] == "" {
			t.Errorf("job field %s is neither honoured nor refused by sessions", tag)
		}
	}
}
