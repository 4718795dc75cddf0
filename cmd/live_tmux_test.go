package cmd_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// tmuxBinary finds tmux (make test-deps installs it). In CI a missing tmux
// fails the test; elsewhere it is skipped with the reason.
func tmuxBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping a terminal test that runs the real CLI in -short mode")
	}
	path, err := exec.LookPath("tmux")
	if err == nil {
		return path
	}
	msg := "tmux is not installed (make test-deps installs it): " + err.Error()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// pane is one tmux server with one window running a command, as a
// person's terminal of the given size.
type pane struct {
	t    *testing.T
	tmux string
	sock string
}

// startPane runs argv (no shell) in a new tmux window of cols×rows with
// the environment env; the pane stays after the command exits.
func startPane(t *testing.T, cols, rows int, dir string, env []string, argv ...string) *pane {
	t.Helper()
	p := &pane{t: t, tmux: tmuxBinary(t), sock: filepath.Join(t.TempDir(), "tmux.sock")}
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g status off\nset -g history-limit 5000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-S", p.sock, "-f", conf, "new-session", "-d", "-x", itoa(cols), "-y", itoa(rows), "-c", dir, "--"}, argv...)
	c := exec.Command(p.tmux, args...)
	c.Env = env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(p.tmux, "-S", p.sock, "kill-server").Run() })
	return p
}

// capture is what the pane shows now, wrapped lines joined (-J), so that a
// line the view let wrap shows as one long line.
func (p *pane) capture() string {
	p.t.Helper()
	out, err := exec.Command(p.tmux, "-S", p.sock, "capture-pane", "-p", "-J", "-S", "-").Output()
	if err != nil {
		p.t.Fatalf("tmux capture-pane: %v", err)
	}
	return string(out)
}

// waitDead waits for pneuma, the pane's command, to exit and returns its
// exit status. tmux calls a pane dead once its process has exited and its
// terminal is closed, and says the status once it has reaped the process.
// tmux 3.3a sometimes sees the terminal close and never reaps the process
// (it stays a zombie for good, pane_dead_status empty: the race fixed by
// tmux's pull request 4841), and a process pneuma does not own (a CLI's
// background shell) may hold the terminal open after pneuma exited: in
// both cases the kernel's record of the process (/proc/PID/stat) tells the
// exit and its status.
func (p *pane) waitDead(within time.Duration) (status string) {
	p.t.Helper()
	pid := p.pid()
	if !poll.UntilEvery(within, paneTick, func() bool {
		if dead, st := p.dead(); dead && st != "" {
			status = st
			return true
		}
		if exited, st := procExit(pid); exited {
			if st == "" { // reaped: tmux has its status now
				_, st = p.dead()
			}
			status = st
			return true
		}
		return false
	}) {
		if n, err := strconv.Atoi(pid); err == nil {
			_ = syscall.Kill(n, syscall.SIGQUIT) // a goroutine dump in the pane
			poll.UntilEvery(5*time.Second, paneTick, func() bool { dead, _ := p.dead(); return dead })
		}
		p.t.Fatalf("pneuma (pid %s) did not exit within %s of its final output; after SIGQUIT the pane shows:\n%s", pid, within, p.capture())
	}
	return status
}

// procExit says whether process pid has exited, from /proc: gone (its
// status then unknown, "") or a zombie, whose stat line ends with its wait
// status (proc(5), field 52).
func procExit(pid string) (exited bool, status string) {
	if pid == "" {
		return false, ""
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return true, ""
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if err != nil || i < 0 {
		return false, ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) == 0 || f[0] != "Z" {
		return false, ""
	}
	ws, err := strconv.Atoi(f[len(f)-1])
	if err != nil {
		return true, ""
	}
	return true, strconv.Itoa(syscall.WaitStatus(ws).ExitStatus())
}

// pid is the pane's process id, "" when tmux does not say.
func (p *pane) pid() string {
	out, err := exec.Command(p.tmux, "-S", p.sock, "display-message", "-p", "#{pane_pid}").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// dead says whether the pane's command exited, and its status.
func (p *pane) dead() (bool, string) {
	out, err := exec.Command(p.tmux, "-S", p.sock, "display-message", "-p", "#{pane_dead} #{pane_dead_status}").Output()
	if err != nil {
		return false, ""
	}
	f := strings.Fields(string(out))
	return len(f) == 2 && f[0] == "1", f[len(f)-1]
}

// waitFor polls the pane until cond holds; it fails with the pane's text.
func (p *pane) waitFor(what string, within time.Duration, cond func(string) bool) string {
	p.t.Helper()
	var last string
	if poll.UntilEvery(within, paneTick, func() bool {
		if last = p.capture(); cond(last) {
			return true
		}
		if dead, status := p.dead(); dead {
			p.t.Fatalf("pneuma exited (%s) before the pane showed %s; it shows:\n%s", status, what, last)
		}
		return false
	}) {
		return last
	}
	p.t.Fatalf("pane never showed %s; it shows:\n%s", what, last)
	return ""
}

// paneTick is how often a pane is asked: each ask starts a tmux process.
const paneTick = 50 * time.Millisecond

func itoa(n int) string { return strconv.Itoa(n) }

// liveBed is a repository, a fake API and a jobs file: two jobs run Bash
// until the test releases them; one fails at once on a 500.
type liveBed struct {
	repo, release, jobs string
	env                 []string
}

func newLiveBed(t *testing.T) *liveBed {
	t.Helper()
	bin := claudetest.Binary(t)
	b := &liveBed{repo: claudetest.GitRepo(t), release: filepath.Join(t.TempDir(), "release")}
	wait := "while [ ! -e " + b.release + " ]; do sleep 0.1; done; echo released"
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		prompt := r.FirstUser().Text()
		switch {
		case strings.Contains(prompt, "TOKEN-FAIL"):
			return fakeapi.Error(500, "api_error", "the fake API is down for this job").WithHeader("x-should-retry", "false")
		case strings.Contains(prompt, "TOKEN-WAIT") && !r.HasToolResult():
			return fakeapi.ToolUse(fakeapi.Bash(wait)).WithUsage(fakeapi.Usage{Input: 200, Output: 30})
		}
		return fakeapi.Text("done").WithUsage(fakeapi.Usage{Input: 300, Output: 40})
	})
	cenv := claudetest.NewEnv(t, api.URL, claudetest.WithMaxRetries(0))
	b.env = append(cenv.Environ(), "PNEUMA_TEST_MAIN=1", "TERM=xterm-256color", "PNEUMA_CLAUDE="+bin)
	b.jobs = filepath.Join(b.repo, "jobs.yaml")
	yaml := `version: 1
defaults:
  permission_mode: bypassPermissions
jobs:
  - name: alpha-refactor
    prompt: TOKEN-WAIT alpha
  - name: beta-docs
    prompt: TOKEN-WAIT beta
  - name: gamma-broken
    prompt: TOKEN-FAIL gamma
`
	if err := os.WriteFile(b.jobs, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLiveViewInTmux runs `pneuma run` on the real CLI in a tmux pane of 80
// and of 160 columns, as a person sees it: mid-run the running jobs with
// their current tool and the failure above them; at the end the failure
// line still there and the final table.
func TestLiveViewInTmux(t *testing.T) {
	for _, cols := range []int{80, 160} {
		t.Run(itoa(cols)+"cols", func(t *testing.T) {
			b := newLiveBed(t)
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			p := startPane(t, cols, 30, b.repo, b.env, exe, "run", "-j", "3", b.jobs)
			mid := p.waitFor("both waiting jobs in Bash and the failure", 90*time.Second, func(s string) bool {
				return strings.Count(s, "Bash: while") == 2 && strings.Contains(s, "✗ gamma-broken")
			})
			t.Logf("mid-run at %d columns:\n%s", cols, mid)
			for _, want := range []string{"alpha-refactor", "beta-docs", "failed (api_error)", "2 running", "(1/3"} {
				if !strings.Contains(mid, want) {
					t.Errorf("mid-run pane lacks %q", want)
				}
			}
			checkWidth(t, mid, cols)
			checkOnce(t, mid)
			if cols == 160 {
				p.resize(t, 100)
				narrow := p.waitFor("the region redrawn at 100 columns", 30*time.Second, func(s string) bool {
					return regionFits(s, 100)
				})
				t.Logf("after a resize to 100 columns:\n%s", narrow)
				checkOnce(t, narrow)
			}
			if dead, _ := p.dead(); dead {
				t.Fatal("the run ended before the jobs were released")
			}
			follow := otherViews(t, b, cols)
			if err := os.WriteFile(b.release, nil, 0o644); err != nil {
				t.Fatal(err)
			}

			if follow != nil {
				follow() // logs -f ends with the run
			}
			status := p.waitDead(3 * time.Minute)
			end := p.capture()
			t.Logf("at the end at %d columns:\n%s", cols, end)
			if status != "1" {
				t.Errorf("exit status %s, want 1 (a job failed)", status)
			}
			for _, want := range []string{"✗ gamma-broken", "✓ alpha-refactor", "✓ beta-docs", "STATUS", "run "} {
				if !strings.Contains(end, want) {
					t.Errorf("final pane lacks %q", want)
				}
			}
			if strings.Contains(end, "Bash: while") || strings.Contains(end, "running ·") {
				t.Errorf("the live region was not erased at the end")
			}
			if strings.Index(end, "✗ gamma-broken") > strings.Index(end, "✓ alpha-refactor") {
				t.Errorf("the failure is not printed before the later successes")
			}
			checkWidth(t, end, cols)
		})
	}
}

// resize makes the pane's window cols wide (SIGWINCH to pneuma).
func (p *pane) resize(t *testing.T, cols int) {
	t.Helper()
	if out, err := exec.Command(p.tmux, "-S", p.sock, "resize-window", "-x", itoa(cols)).CombinedOutput(); err != nil {
		t.Fatalf("tmux resize-window: %v: %s", err, out)
	}
}

// regionFits says whether the running lines and the footer fit cols.
func regionFits(pane string, cols int) bool {
	n := 0
	for _, l := range strings.Split(pane, "\n") {
		if strings.HasPrefix(l, "  alpha") || strings.HasPrefix(l, "  beta") || strings.Contains(l, " running · ") {
			if len([]rune(strings.TrimRight(l, " "))) > cols {
				return false
			}
			n++
		}
	}
	return n == 3
}

// checkOnce fails when a running job's line or the footer shows twice:
// a frame that did not erase the last one.
func checkOnce(t *testing.T, pane string) {
	t.Helper()
	for _, what := range []string{"  alpha-refactor ", "  beta-docs ", " running · "} {
		if n := strings.Count(pane, what); n != 1 {
			t.Errorf("%q shows %d times, want once (a frame left behind):\n%s", what, n, pane)
		}
	}
}

// checkWidth fails on a line of the live view wider than the pane (the
// view wrapped it); the warnings before and the table after are not the
// view's.
func checkWidth(t *testing.T, pane string, cols int) {
	t.Helper()
	for _, l := range strings.Split(pane, "\n") {
		view := strings.HasPrefix(l, "✓ ") || strings.HasPrefix(l, "✗ ") || strings.HasPrefix(l, "  alpha") ||
			strings.HasPrefix(l, "  beta") || strings.Contains(l, " running · ")
		if n := len([]rune(strings.TrimRight(l, " "))); view && n > cols {
			t.Errorf("line of %d columns in a pane of %d (wrapped): %q", n, cols, l)
		}
	}
}

// otherViews looks at the run the pane runs from other processes, as a
// person in another terminal would: `pneuma status` and `status --json`
// show the running jobs and the failure; `pneuma logs -f` of a waiting job
// shows its tool call. The returned func, called after the jobs are
// released, checks that logs -f ends by itself with the job's result.
func otherViews(t *testing.T, b *liveBed, cols int) func() {
	t.Helper()
	runDir := onlyRunDir(t, b.repo)
	id := filepath.Base(runDir)
	st := run(t, b.repo, nil, "status", id)
	if st.code != 0 {
		t.Fatalf("status exit %d: %s", st.code, st.stderr)
	}
	for _, want := range []string{"run " + id, "✗ gamma-broken  failed (api_error)", "alpha-refactor", "Bash: while", "1/3 done", "2 running"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("pneuma status lacks %q:\n%s", want, st.stdout)
		}
	}
	js := run(t, b.repo, nil, "status", "--json", id)
	var state struct {
		Total   int                        `json:"jobs_total"`
		Running map[string]json.RawMessage `json:"running"`
		Done    []json.RawMessage          `json:"done"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &state); err != nil || state.Total != 3 || len(state.Running) != 2 || len(state.Done) != 1 {
		t.Errorf("status --json: %v: %+v\n%s", err, state, js.stdout)
	}
	if cols != 80 {
		return nil // logs -f once is enough
	}
	c := pneuma(t, b.repo, "logs", "-f", id, "alpha-refactor")
	var out lockedBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill() })
	poll.Eventually(t, 30*time.Second, func() bool { return strings.Contains(out.String(), "→ Bash: while") }, "logs -f to show the running tool call")
	return func() {
		if err := waitTimeout(c, 60*time.Second); err != nil {
			t.Errorf("logs -f: %v\n%s", err, out.String())
		}
		for _, want := range []string{"── session", "→ Bash: while", "← released", "✓ result"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("logs -f lacks %q:\n%s", want, out.String())
			}
		}
		t.Logf("logs -f:\n%s", out.String())
	}
}
