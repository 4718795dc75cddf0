package cmd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/cmd"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakecli"
	"github.com/pneuma-cli/pneuma/notify"
	"github.com/pneuma-cli/pneuma/report"
)

// TestRunNotifiesFromConfig: pneuma.yaml's notify: targets get a failed
// job and the finished run with the report's numbers, signed; a target
// that answers 404 is logged once and does not change the run's exit.
func TestRunNotifiesFromConfig(t *testing.T) {
	const secret = "run-notify-secret-0123456789"
	var mu sync.Mutex
	var got []notify.Notification
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(secret), body, r.Header.Get(notify.HeaderSignature), time.Minute, time.Now()); err != nil {
			t.Errorf("signature: %v", err)
		}
		var n notify.Notification
		_ = json.Unmarshal(body, &n)
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}))
	defer hook.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()

	repo := claudetest.GitRepo(t)
	cli := fakecli.Install(t, fakecli.Scenario{Turns: []fakecli.Turn{{When: "second", Steps: []fakecli.Step{
		{Line: fakecli.InitLine("{{session}}")},
		{Line: fakecli.ResultLine("{{session}}", fakecli.ResultOpts{Subtype: "error_max_turns", IsError: true, NumTurns: 3, CostUSD: 0.5, Errors: []string{"Reached maximum number of turns (2)"}})},
		fakecli.Exit(1),
	}}}})
	path := writeJobs(t, repo, "version: 1\nconcurrency: 1\njobs:\n  - name: one\n    prompt: first\n  - name: two\n    prompt: second\n")
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "pneuma.yaml")
	yaml := "notify:\n" +
		"  - url: " + hook.URL + "/hook\n    secret_file: " + secretFile + "\n    events: [job_failed, run_finished]\n" +
		"  - url: " + gone.URL + "/gone\n"
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.json")
	r := run(t, "", nil, "run", "--config", config, "--claude", cli, "--stagger", "0", "--report", out, path)
	if r.code != cmd.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	rep := readReport(t, out)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Event != notify.EventJobFailed || got[0].Job != "two" || got[0].Reason != report.ReasonMaxTurns ||
		got[1].Event != notify.EventRunFinished || got[1].Totals == nil || *got[1].Totals != rep.Totals {
		t.Fatalf("notifications %+v\nreport totals %+v", got, rep.Totals)
	}
	if n := strings.Count(r.stderr, "notify: "+notify.Name(gone.URL)+":"); n != 2 || strings.Contains(r.stderr, "/gone") {
		t.Errorf("the 404 target: %d log lines (want the first failure and the count), or its path logged:\n%s", n, r.stderr)
	}
}

// TestRunRefusesBadNotifyTargets: a bad target is a usage error naming it.
func TestRunRefusesBadNotifyTargets(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "pneuma.yaml")
	if err := os.WriteFile(config, []byte("notify:\n  - url: https://x.example/h\n    format: xml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeJobs(t, claudetest.GitRepo(t), twoJobs)
	r := run(t, "", nil, "run", "--config", config, "--claude", fakecli.Install(t, fakecli.Scenario{}), path)
	if r.code != cmd.ExitUsage || !strings.Contains(r.stderr, `notify[0]: format "xml"`) {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// TestRunNotifiesFromJobsFile: the jobs file's notify: targets get the
// run's notifications, their secret_file relative to the jobs file; a bad
// one is a usage error naming the jobs file.
func TestRunNotifiesFromJobsFile(t *testing.T) {
	const secret = "jobs-file-secret-0123456789"
	var mu sync.Mutex
	var got []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(secret), body, r.Header.Get(notify.HeaderSignature), time.Minute, time.Now()); err != nil {
			t.Errorf("signature: %v", err)
		}
		mu.Lock()
		got = append(got, r.Header.Get(notify.HeaderEvent))
		mu.Unlock()
	}))
	defer hook.Close()
	repo := claudetest.GitRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "hook.key"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeJobs(t, repo, "version: 1\nnotify:\n  - url: "+hook.URL+"\n    secret_file: hook.key\n    events: [job_succeeded, run_finished]\n"+
		"jobs:\n  - name: one\n    prompt: first\n")
	r := run(t, "", nil, "run", "--claude", fakecli.Install(t, fakecli.Scenario{}), path)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	mu.Lock()
	if strings.Join(got, " ") != "job_succeeded run_finished" {
		t.Errorf("notifications %q", got)
	}
	mu.Unlock()

	bad := writeJobs(t, repo, "version: 1\nnotify:\n  - url: ftp://x/y\njobs:\n  - name: one\n    prompt: first\n")
	r = run(t, "", nil, "run", "--claude", fakecli.Install(t, fakecli.Scenario{}), bad)
	if r.code != cmd.ExitUsage || !strings.Contains(r.stderr, "notify url must be an http") {
		t.Fatalf("bad target: exit %d: %s", r.code, r.stderr)
	}
}
