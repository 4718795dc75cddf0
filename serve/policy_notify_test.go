package serve

import (
	"errors"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/jobfile"
)

// A client's notify: targets are requests the server makes: refused
// unless the operator allows notify; allowed, each must be valid and its
// secret file under a root.
func TestPolicyNotify(t *testing.T) {
	root := t.TempDir()
	file := func(targets ...jobfile.Notify) *jobfile.File {
		return &jobfile.File{Version: 1, Notify: targets, Jobs: []jobfile.Job{{Name: "a", Prompt: "hi", Repo: root}}}
	}
	closed := Policy{}
	closed.defaults()
	c := policyCheck{p: &closed, roots: []string{root}, dir: root}
	var pe *PolicyError
	if err := c.file(file(jobfile.Notify{URL: "https://x.example/h"})); !errors.As(err, &pe) || pe.Field != "notify" || !strings.Contains(err.Error(), `"notify"`) {
		t.Fatalf("notify without the operator's allow: %v", err)
	}
	open := Policy{Allow: []string{"notify"}}
	open.defaults()
	c.p = &open
	if err := c.file(file(jobfile.Notify{URL: "https://x.example/h", SecretFile: "hook.key"})); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if err := c.file(file(jobfile.Notify{URL: "https://x.example/h", SecretFile: "/etc/shadow"})); !errors.As(err, &pe) || pe.Field != "notify[0].secret_file" {
		t.Fatalf("a secret file outside the roots: %v", err)
	}
	var de *jobfile.DecodeError
	if err := c.file(file(jobfile.Notify{URL: "file:///etc/passwd"})); !errors.As(err, &de) || de.Problems[0].Pos.Path != "notify[0]" {
		t.Fatalf("a file URL: %v", err)
	}
}

// Over HTTP: a run request whose jobs file sets notify: is a 403 naming
// the field unless the operator allows it.
func TestRunRequestNotifyRefused(t *testing.T) {
	b := newBed(t, nil)
	body := `{"jobs_yaml":"version: 1\nnotify:\n  - url: http://127.0.0.1:1/h\njobs: [{name: a, prompt: hi}]\n"}`
	var e struct {
		Error string `json:"error"`
	}
	resp := b.do("POST", "/api/runs", body, &e)
	if resp.StatusCode != 403 || !strings.Contains(e.Error, "notify") {
		t.Fatalf("%d %q", resp.StatusCode, e.Error)
	}
}
