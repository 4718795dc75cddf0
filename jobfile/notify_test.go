package jobfile

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeNotify(t *testing.T) {
	f, err := Decode("/work/jobs.yaml", []byte(`version: 1
notify:
  - url: https://hooks.example/p
    format: slack
    events: [job_failed, run_finished]
  - url: https://example/h
    secret_file: secrets/hook
jobs:
  - name: a
    prompt: hi
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Notify) != 2 || f.Notify[0].Format != "slack" || len(f.Notify[0].Events) != 2 || f.Notify[1].SecretFile != "secrets/hook" {
		t.Fatalf("notify %+v", f.Notify)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"notify: https://x\n", `jobs.yaml:2:9: notify must be a list of targets, not a scalar`},
		{"notify:\n  - url: https://x\n    secret: s\n", `jobs.yaml:4:5: unknown field "secret"`},
		{"notify:\n  - format: json\n", `jobs.yaml:3:5: a notify target needs a url`},
		{"notifi: []\n", `did you mean "notify"?`},
		{"notify:\n  - url: ftp://x\n", `jobs.yaml:3:10: notify url must be an http:// or https:// URL`},
		{"notify:\n  - url: https://x\n    format: xml\n", `jobs.yaml:4:13: unknown notify format "xml"`},
		{"notify:\n  - url: https://x\n    events: [job_fail]\n", `unknown notify event "job_fail" (did you mean "job_failed"?)`},
	} {
		_, err := Decode("jobs.yaml", []byte("version: 1\n"+tc.yaml+"jobs: [{name: a, prompt: hi}]\n"))
		var de *DecodeError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
