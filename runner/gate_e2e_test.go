package runner_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/jobfile"
	"github.com/pneuma-cli/pneuma/runner"
)

// A 429/529 storm that a session's CLI meets slows a run that shares the
// server's gate: the bound of CLIs at once halves (4 to 2) and the run's
// jobs (concurrency 4) never have more CLIs asking the API at once than the
// bound allows, as the jobs of one run slow each other.
func TestStormInASessionSlowsARun(t *testing.T) {
	repo := claudetest.GitRepo(t)
	release := make(chan struct{})
	var mu sync.Mutex
	inflight, most := map[string]bool{}, 0
	var shared *runner.SharedGate
	over := ""
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if r.Contains("TOKEN-STORM") {
			return fakeapi.Error(529, "overloaded_error", "Overloaded")
		}
		job := ""
		for i := range 4 {
			if r.Contains(fmt.Sprintf("TOKEN-JOB-%d", i)) {
				job = fmt.Sprint(i)
			}
		}
		if job == "" {
			return fakeapi.Text("ok")
		}
		mu.Lock()
		inflight[job] = true
		most = max(most, len(inflight))
		if limit := shared.Limit(); len(inflight) > limit && over == "" {
			over = fmt.Sprintf("%d jobs' CLIs asked the API at once; the shared bound was %d", len(inflight), limit)
		}
		mu.Unlock()
		<-release // the job's CLI holds its slot until the test lets it go
		mu.Lock()
		delete(inflight, job)
		mu.Unlock()
		return fakeapi.Text("done " + job)
	})
	env := claudetest.NewEnv(t, api.URL, claudetest.WithMaxRetries(3))
	var changes []string
	var changesMu sync.Mutex
	shared = runner.NewSharedGate(4, func(limit int, reason string) {
		changesMu.Lock()
		changes = append(changes, fmt.Sprintf("%s:%d", reason, limit))
		changesMu.Unlock()
	})

	// The storm: the session's CLI retries three 529s (api_retry lines).
	ev := &events{}
	s, err := runner.OpenSession(context.Background(), mustSpec(t, `{}`), runner.SessionOptions{
		ID: "stormy", Dir: runner.StateDir(t.TempDir()).Session("stormy"), WorkDir: repo, Binary: claudetest.Binary(t),
		Environ: env.Environ(), OnEvent: ev.add, StopGrace: 500 * time.Millisecond, Gate: shared,
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Send("TOKEN-STORM please")
	poll.Eventually(t, 2*time.Minute, func() bool { return shared.Limit() == 2 }, "the session's storm halves the shared bound (changes %v)", changes)
	if _, err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The run: four jobs at concurrency 4, sharing the gate.
	var jobs strings.Builder
	for i := range 4 {
		fmt.Fprintf(&jobs, "  - name: j%d\n    prompt: TOKEN-JOB-%d\n", i, i)
	}
	path := filepath.Join(repo, "jobs.yaml")
	if err := os.WriteFile(path, []byte("version: 1\nconcurrency: 4\njobs:\n"+jobs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := jobfile.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := runner.BuildPlan(context.Background(), f, runner.PlanOptions{
		RunID: "shared", Binary: claudetest.Binary(t), Stagger: -1, Getenv: envGetter(env.Environ()), IsRoot: os.Geteuid() == 0,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	done := make(chan error, 1)
	var succeeded int
	go func() {
		rep, err := runner.Run(ctx, p, runner.Options{Environ: env.Environ(), StopGrace: 500 * time.Millisecond, Gate: shared})
		if rep != nil {
			succeeded = rep.Totals.Succeeded
		}
		done <- err
	}()
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(inflight) }
	poll.Eventually(t, 2*time.Minute, func() bool { return count() >= 2 }, "two jobs' CLIs ask the API")
	// Without the shared gate the other two start now; with it they wait
	// for a slot (or for the bound to recover).
	poll.Until(2*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return over != "" })
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if over != "" {
		t.Error(over)
	}
	if succeeded != 4 || most < 2 {
		t.Errorf("succeeded %d of 4, at most %d at once", succeeded, most)
	}
	changesMu.Lock()
	defer changesMu.Unlock()
	if len(changes) == 0 || changes[0] != "overloaded:2" {
		t.Errorf("changes of the shared bound: %v", changes)
	}
}
