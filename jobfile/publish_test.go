package jobfile

import (
	"strings"
	"testing"
)

func TestDecodePublish(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"valid", "version: 1\njobs:\n  - name: a\n    prompt: p\n    push: true\n    remote: upstream\n    pull_request: {title: 'x {{.Name}}', draft: true, labels: [bot]}\n", nil},
		{"template syntax", "version: 1\njobs:\n  - name: a\n    prompt: p\n    pull_request:\n      title: '{{.Name'\n", []string{"x.yaml:6:7: pull_request.title:", "unclosed action"}},
		{"unknown template field", "version: 1\njobs:\n  - name: a\n    prompt: p\n    pull_request: {body: '{{.Nmae}}'}\n", []string{"x.yaml:5:19: pull_request.body:", "can't evaluate field Nmae"}},
		{"unknown field", "version: 1\njobs:\n  - name: a\n    prompt: p\n    pull_request: {titel: x}\n", []string{`unknown field "titel" (did you mean "title"?)`}},
		{"no worktree", "version: 1\njobs:\n  - name: a\n    prompt: p\n    worktree: false\n    push: true\n", []string{"x.yaml:5:15: push and pull_request need a job branch"}},
		{"bad remote", "version: 1\njobs:\n  - name: a\n    prompt: p\n    push: true\n    remote: --upload-pack=x\n", []string{`x.yaml:6:13: remote "--upload-pack=x" is not a git remote name`}},
		{"from defaults", "version: 1\ndefaults:\n  pull_request: {draft: true}\njobs:\n  - name: a\n    prompt: p\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Decode("x.yaml", []byte(tc.yaml))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if j := f.Jobs[0]; j.PullRequest == nil || !j.IsSet("pull_request") {
					t.Errorf("pull_request not decoded: %+v", j)
				}
				return
			}
			if err == nil {
				t.Fatal("decoded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
