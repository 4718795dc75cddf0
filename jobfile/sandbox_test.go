package jobfile

import (
	"slices"
	"strings"
	"testing"
)

func TestDecodeSandbox(t *testing.T) {
	f, err := Decode("jobs.yaml", []byte(`version: 1
defaults:
  sandbox: true
jobs:
  - name: inherits
    prompt: p
  - name: off
    prompt: p
    sandbox: false
  - name: opened
    prompt: p
    sandbox:
      network: [example.com, "127.0.0.1:8080"]
      read: [docs]
      write: [out]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, j := range f.Jobs {
		switch {
		case j.Sandbox == nil:
			got[j.Name] = "nil"
		case !j.Sandbox.On():
			got[j.Name] = "off"
		default:
			got[j.Name] = "on " + strings.Join(slices.Concat(j.Sandbox.Network, j.Sandbox.Read, j.Sandbox.Write), ",")
		}
	}
	want := map[string]string{"inherits": "on ", "off": "off", "opened": "on example.com,127.0.0.1:8080,docs,out"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("job %s: sandbox %q, want %q", k, got[k], v)
		}
	}
}

func TestDecodeSandboxErrors(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"string":      {"sandbox: yes please", "jobs.yaml:5:14: sandbox must be true, false or a mapping"},
		"list":        {"sandbox: [a]", "jobs.yaml:5:14: sandbox must be true, false or a mapping"},
		"unknown key": {"sandbox: {netwrk: [a]}", `jobs.yaml:5:15: unknown field "netwrk" (did you mean "network"?)`},
		"url":         {`sandbox: {network: ["https://x.org/"]}`, `jobs.yaml:5:14: sandbox.network: "https://x.org/" is not a host`},
		"bad port":    {`sandbox: {network: ["x.org:99999"]}`, `jobs.yaml:5:14: sandbox.network: "x.org:99999" is not a host:port`},
		"empty path":  {`sandbox: {write: [""]}`, `jobs.yaml:5:14: sandbox.write: "" is not a path`},
	} {
		t.Run(name, func(t *testing.T) {
			doc := "version: 1\njobs:\n  - name: a\n    prompt: p\n    " + tc.yaml + "\n"
			_, err := Decode("jobs.yaml", []byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
