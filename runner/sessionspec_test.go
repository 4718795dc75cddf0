package runner

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeSessionSpec(t *testing.T) {
	spec, err := DecodeSessionSpec([]byte(`{"name":"fix","repo":"r","base":"main","model":"sonnet","permission_mode":"acceptEdits",
		"policy":{"deny":["Bash(rm:*)"]},"permission_prompt":"client","permission_timeout":"30s","env":{"A":"1"},"timeout":"10m"}`))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Job.Name != "fix" || spec.Job.Repo != "r" || spec.Job.Model != "sonnet" || spec.Job.Policy == nil ||
		spec.PermissionPrompt != "client" || spec.PermissionWait() != 30*time.Second || spec.Job.Timeout.Std() != 10*time.Minute {
		t.Fatalf("decoded %+v", spec)
	}
	if (&SessionSpec{}).PermissionWait() != DefaultPermissionTimeout {
		t.Fatal("default permission timeout")
	}
}

// Every problem at once, each with its field path.
func TestDecodeSessionSpecProblems(t *testing.T) {
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
			"verify: verify is a field of jobs files",
		}},
		{`{"max_turns":"many","permission_mode":"yolo","policy":{"alow":["Read"]},"permission_prompt":"server","permission_timeout":"5"}`, []string{
			"max_turns: ",
			`permission_mode: permission_mode "yolo" is not one of`,
			`policy.alow: unknown field "alow"`,
			`permission_prompt: permission_prompt must be "client"`,
			"permission_timeout: duration \"5\" needs a unit",
		}},
		{`{"add_dirs":["a",3,{"x":1}]}`, []string{"add_dirs"}},
	}
	for _, tt := range tests {
		_, err := DecodeSessionSpec([]byte(tt.body))
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

func FuzzDecodeSessionSpec(f *testing.F) {
	f.Add([]byte(`{"repo":"r","policy":{"allow":["Read"]},"permission_prompt":"client"}`))
	f.Add([]byte(`{"env":{"A":"1"},"timeout":"1m","add_dirs":["x"]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeSessionSpec(data)
		if err == nil && spec == nil {
			t.Fatal("nil spec without an error")
		}
		var de *DecodeError
		if err != nil && (!errors.As(err, &de) || len(de.Problems) == 0) {
			t.Fatalf("error %v is not a *DecodeError with problems", err)
		}
	})
}
