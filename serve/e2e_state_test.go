package serve_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestE2ELongLinesSurviveRestarts is finding 1 of issue 26 as it was
// reproduced: a user message of 270,000 characters and a 300 KB answer
// from the model, through the real CLI, then restarts of pneuma serve.
// Every restart starts, lists the session and replays the same events; the
// session then resumes.
func TestE2ELongLinesSurviveRestarts(t *testing.T) {
	repo := claudetest.GitRepo(t)
	long := strings.Repeat("ab", 150<<10) // 300 KB
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if strings.Contains(r.Text(), "long answer") {
			return fakeapi.Text(long)
		}
		return fakeapi.Text("short answer")
	})
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo}))
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", jsonString(map[string]any{"content": strings.Repeat("m", 270_000), "wait": true}), nil)
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"a long answer please","wait":true}`, nil)
	before := s.events(o.ID)
	if !strings.Contains(jsonString(before), long) {
		t.Fatalf("no event holds the 300 KB answer:\n%s", dump(before))
	}
	for restart := range 3 {
		s.stop(syscall.SIGTERM)
		s.restart()
		after := s.events(o.ID)
		if len(after) < len(before) {
			t.Fatalf("restart %d: %d events, %d before", restart, len(after), len(before))
		}
		for i := range before {
			if jsonString(before[i]) != jsonString(after[i]) {
				t.Fatalf("restart %d: event %d changed:\n%.300s\n%.300s", restart, i+1, jsonString(before[i]), jsonString(after[i]))
			}
		}
		if st := s.get(o.ID).Status; st != "idle" {
			t.Fatalf("restart %d: session %s", restart, st)
		}
		before = after
	}
	var r struct {
		Result map[string]any `json:"result"`
	}
	s.must(200, "POST", "/api/sessions/"+o.ID+"/messages", `{"content":"still there?","wait":true}`, &r)
	if !strings.Contains(jsonString(r.Result), "short answer") {
		t.Fatalf("after the restarts: %s", jsonString(r.Result))
	}
}

// TestE2EStateDirLock is finding 6 of issue 26: a second pneuma serve on
// the state directory of a running one exits 3 naming the first one's pid,
// before it answers anything; once the first is killed, a server starts.
func TestE2EStateDirLock(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("ok") })
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	second := exec.CommandContext(ctx, pneumaBinary(t), s.args...)
	second.Dir, second.Env = s.dir, s.env
	var stderr bytes.Buffer
	second.Stderr = &stderr
	err := second.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(stderr.String(), fmt.Sprintf("pid %d", s.cmd.Process.Pid)) {
		t.Fatalf("second server: %v, stderr %q; want exit 3 naming pid %d", err, stderr.String(), s.cmd.Process.Pid)
	}
	s.stop(syscall.SIGKILL) // the kernel drops the lock with the process
	s.restart()
	s.must(200, "GET", "/api/sessions", nil, nil)
}
