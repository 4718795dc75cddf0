package serve_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

// TestE2EResumeLostRun: a run whose server was killed mid-run is listed
// lost after the restart, and POST .../resume goes on from its journal:
// the job that had finished does not run again, the rest do, and the
// report lists every job. A finished run does not resume (409).
func TestE2EResumeLostRun(t *testing.T) {
	repo := claudetest.GitRepo(t)
	release, betaAsked := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	asked := map[string]int{}
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		m := pleaseRE.FindStringSubmatch(r.Text())
		if m == nil && strings.Contains(r.Text(), "Continue where you left off") {
			// 2.1.332 flushes the prompt to the transcript before the API
			// call, so the resumed job continues the session: its prompt is
			// earlier in the conversation.
			m = pleaseRE.FindStringSubmatch(r.FirstUser().Text())
		}
		if m == nil {
			return fakeapi.Text("ok")
		}
		mu.Lock()
		asked[m[1]]++
		first := asked[m[1]] == 1
		mu.Unlock()
		if m[1] == "beta" && first {
			close(betaAsked)
			<-release // the server is killed while beta's CLI waits here
		}
		return fakeapi.Text(m[1] + " done").WithUsage(fakeapi.Usage{Input: 100, Output: 10})
	})
	env := claudetest.NewEnv(t, api.URL)
	jobs := fmt.Sprintf("version: 1\nconcurrency: 1\ndefaults:\n  repo: %s\njobs:\n"+
		"  - name: alpha\n    prompt: alpha please\n  - name: beta\n    prompt: beta please\n  - name: gamma\n    prompt: gamma please\n", repo)

	s := startServer(t, env, repo)
	var created struct{ ID string }
	s.must(201, "POST", "/api/runs", map[string]string{"jobs_yaml": jobs}, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := s.follow(ctx, "/api/runs/"+created.ID+"/ws", 0)
	c.await("job_started", `"job":"beta"`)
	select {
	case <-betaAsked: // beta's CLI is at work: the journal says running
	case <-ctx.Done():
		t.Fatal("beta's prompt never reached the API")
	}
	s.stop(syscall.SIGKILL)
	once.Do(func() { close(release) })

	s.restart()
	var lost struct {
		Status  string `json:"status"`
		LastSeq int64  `json:"last_seq"`
	}
	s.must(200, "GET", "/api/runs/"+created.ID, nil, &lost)
	if lost.Status != "lost" {
		t.Fatalf("after the kill the run is %q, want lost", lost.Status)
	}
	s.must(201, "POST", "/api/runs/"+created.ID+"/resume", nil, nil)
	c = s.follow(ctx, "/api/runs/"+created.ID+"/ws", lost.LastSeq)
	c.await("run_finished", "")
	var done struct {
		Status string `json:"status"`
		Report *struct {
			Totals struct{ Jobs int } `json:"totals"`
		} `json:"report"`
	}
	s.must(200, "GET", "/api/runs/"+created.ID, nil, &done)
	if done.Report == nil || done.Report.Totals.Jobs != 3 || done.Status != "succeeded" {
		t.Fatalf("resumed run: status %s, report %+v", done.Status, done.Report)
	}
	mu.Lock()
	defer mu.Unlock()
	if asked["alpha"] != 1 || asked["gamma"] != 1 || asked["beta"] < 2 {
		t.Errorf("prompts asked %v: alpha and gamma once, beta again after the resume", asked)
	}
	if code, body := s.do("POST", "/api/runs/"+created.ID+"/resume", nil); code != 409 {
		t.Errorf("resume of a finished run: %d %s", code, body)
	}
}
