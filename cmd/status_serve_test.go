package cmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// servedBed is a `pneuma serve` process (this test binary as pneuma) on a
// loopback port with its state in a temporary directory, the liveBed's
// repository its root and the CLI pointed at the liveBed's fake API.
type servedBed struct {
	url, token, state string
}

func startServed(t *testing.T, b *liveBed) *servedBed {
	t.Helper()
	s := &servedBed{token: "status-test-token-0123456789abcdef", state: t.TempDir()}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(s.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "serve", "--addr", "127.0.0.1:0", "--state-dir", s.state, "--root", b.repo,
		"--token-file", tokenFile, "--claude", claudetest.Binary(t), "--access-log", "off",
		"--client-permission-mode", "bypassPermissions") // the liveBed's jobs run Bash unasked
	c.Dir, c.Env = b.repo, b.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errOut lockedBuffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Process.Signal(syscall.SIGTERM) // stops its runs like Ctrl-C
		if err := waitTimeout(c, 60*time.Second); err != nil {
			t.Errorf("pneuma serve did not stop cleanly: %v\n%s", err, errOut.String())
		}
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // anything of its group left
	})
	poll.Eventually(t, 30*time.Second, func() bool {
		_, u, ok := strings.Cut(out.String(), "pneuma serve: ")
		if ok && strings.Contains(u, "\n") {
			s.url = strings.TrimSuffix(strings.Fields(u)[0], "/")
		}
		return s.url != ""
	}, "pneuma serve to print its URL; stderr:\n%s", &errOut)
	return s
}

// post sends a JSON request with the token and decodes the answer.
func (s *servedBed) post(t *testing.T, path string, body, out any) {
	t.Helper()
	data, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url+path, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, answer)
	}
	if err := json.Unmarshal(answer, out); err != nil {
		t.Fatalf("POST %s: %v in %s", path, err, answer)
	}
}

// runningLine is the running line of job in status's output ("" if none).
func runningLine(out, job string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  "+job+" ") {
			return l
		}
	}
	return ""
}

// footerOf is the last line of status's output: the footer.
func footerOf(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestStatusOfServedRun: a run started through a real `pneuma serve` on
// the real CLI records the fine events in its events.jsonl, so that
// `pneuma status --state-dir` (another process) shows each waiting job's
// current tool and turns, `pneuma logs` its tool call, and, once the jobs
// are released, the run done with every job's line.
func TestStatusOfServedRun(t *testing.T) {
	b := newLiveBed(t)
	s := startServed(t, b)
	var created struct{ ID string }
	s.post(t, "/api/runs", map[string]any{"jobs_file": b.jobs, "concurrency": 3}, &created)
	id := created.ID

	var st result
	status := func() result {
		return run(t, b.repo, nil, "status", "--state-dir", s.state, id)
	}
	if !poll.Until(120*time.Second, func() bool {
		st = status()
		return strings.Count(st.stdout, "Bash: while") == 2 && strings.Contains(st.stdout, "✗ gamma-broken")
	}) {
		t.Fatalf("status never showed both jobs in Bash and the failure: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	t.Logf("pneuma status mid-run:\n%s", st.stdout)
	for _, job := range []string{"alpha-refactor", "beta-docs"} {
		if l := runningLine(st.stdout, job); !strings.Contains(l, "1 turn") || !strings.Contains(l, "Bash: while") {
			t.Errorf("running line of %s lacks its turn and tool: %q", job, l)
		}
	}
	for _, want := range []string{"run " + id, "failed (api_error)", "1/3 done", "2 running"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("pneuma status lacks %q", want)
		}
	}
	logs := run(t, b.repo, nil, "logs", "--state-dir", s.state, id, "alpha-refactor")
	if logs.code != 0 || !strings.Contains(logs.stdout, "→ Bash: while") {
		t.Errorf("pneuma logs of a served job: exit %d\n%s%s", logs.code, logs.stdout, logs.stderr)
	}

	if err := os.WriteFile(b.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !poll.Until(120*time.Second, func() bool {
		st = status()
		return strings.Contains(footerOf(st.stdout), " · failed · ") // the run ended, failed by gamma
	}) {
		t.Fatalf("status never showed the run done: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	t.Logf("pneuma status at the end:\n%s", st.stdout)
	if f := footerOf(st.stdout); !strings.HasPrefix(f, "3/3 done · 0 running") {
		t.Errorf("final footer %q, want 3/3 done and none running", f)
	}
	for _, want := range []string{"✓ alpha-refactor  succeeded", "✓ beta-docs  succeeded", "✗ gamma-broken  failed"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("final status lacks %q", want)
		}
	}
	if strings.Contains(st.stdout, "Bash: while") {
		t.Errorf("final status still shows a running tool")
	}
}
