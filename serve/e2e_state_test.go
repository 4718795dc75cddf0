package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/serve"
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

// TestE2ELongPollRSS is finding 7 of issue 26 as it was measured: 20
// parallel long polls of a 20 MB log on a real pneuma serve. Each reads the
// whole log page by page; the server's peak RSS (VmHWM) must not grow with
// the log times the readers (it grew from 136 MB to 1.75 GB).
func TestE2ELongPollRSS(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("ok") })
	s := startServer(t, claudetest.NewEnv(t, api.URL), repo)
	o := s.create(jsonString(map[string]string{"repo": repo}))
	s.stop(syscall.SIGTERM)
	// 20 MB of events appended as the server writes them.
	events := filepath.Join(s.args[slices.Index(s.args, "--state-dir")+1], "sessions", o.ID, "events.jsonl")
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(bytes.Count(data, []byte("\n")))
	f, err := os.OpenFile(events, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat("r", 400<<10)
	for range 50 {
		seq++
		fmt.Fprintf(f, `{"seq":%d,"type":"user_message","time":"2026-01-01T00:00:00Z","content":%q}`+"\n", seq, content)
	}
	f.Close()
	s.restart()
	before := vmHWM(t, s.cmd.Process.Pid)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for after := int64(0); after < seq; {
				var p page
				code, body := s.do("GET", fmt.Sprintf("/api/sessions/%s/events?after=%d", o.ID, after), nil)
				if err := json.Unmarshal(body, &p); code != 200 || err != nil || len(p.Events) == 0 {
					errs <- fmt.Errorf("poll after %d: %d %v", after, code, err)
					return
				}
				n += int64(len(p.Events))
				after = p.NextAfter
			}
			if n != seq {
				errs <- fmt.Errorf("%d events polled, the log has %d", n, seq)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	after := vmHWM(t, s.cmd.Process.Pid)
	t.Logf("log of %d events (%d MB); server peak RSS %d MB after the restart, %d MB after 20 parallel long polls of the whole log (race detector: %v)",
		seq, (len(data)+50*len(content))>>20, before>>20, after>>20, serve.RaceEnabled)
	limit := int64(200 << 20)
	if serve.RaceEnabled {
		limit *= 3 // the race detector's shadow memory
	}
	if after-before > limit {
		t.Fatalf("peak RSS grew by %d MB under 20 long polls of a 20 MB log", (after-before)>>20)
	}
}

// vmHWM is a process's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}
