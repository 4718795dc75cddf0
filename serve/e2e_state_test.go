package serve_test

import (
	"strings"
	"syscall"
	"testing"

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
