package history_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/history"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

// TestEndToEndBackgroundSession2_1_332: `claude --bg` (CLI 2.1.332) hands the
// session to a daemon it starts and returns at once. The session writes an
// ordinary top-level transcript (its lines say sessionKind "bg"; the daemon
// keeps its own state under ~/.claude/jobs/ and ~/.claude/daemon/, which hold
// no conversation): history lists it as a session of its project, priced
// like the same call in the foreground.
//
// An interactive session needs what a person would have done once: the
// workspace trusted and the API key approved (~/.claude.json); without them
// --bg exits "Workspace not trusted" or the session answers "Not logged in".
func TestEndToEndBackgroundSession2_1_332(t *testing.T) {
	t.Parallel()
	usage := fakeapi.Usage{Input: 900, Output: 60, CacheWrite: 200}
	b := newBed(t, func(r *fakeapi.Request) fakeapi.Response {
		switch {
		case !r.Stream || len(r.Tools) == 0:
			// An interactive session's side calls (its title, ...): not in
			// the transcript.
			return fakeapi.Text("side call")
		case strings.Contains(r.Text(), "background"):
			return fakeapi.Text("BACKGROUND-ANSWER").WithUsage(usage)
		}
		return fakeapi.Text("Foreground answer.").WithUsage(usage)
	})
	if !claudetest.AtLeast(t, b.bin, "2.1.332") {
		t.Skip("CLI " + claudetest.PinnedVersion(t, b.bin) + " has no --bg")
	}
	fg := b.run("Answer in the foreground.")

	key := b.env.APIKey
	trust := map[string]any{
		"hasCompletedOnboarding": true,
		"customApiKeyResponses":  map[string]any{"approved": []string{key[len(key)-20:]}, "rejected": []string{}},
		"projects":               map[string]any{b.dir: map[string]any{"hasTrustDialogAccepted": true}},
	}
	data, _ := json.Marshal(trust)
	if err := os.WriteFile(filepath.Join(b.env.Home, ".claude.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() { stopDaemon(t, b) })
	out := cli(t, ctx, b, "--bg", "Answer in the background.")
	if !strings.Contains(out, "backgrounded") {
		t.Fatalf("claude --bg: %s", out)
	}

	var bg history.UsageRow
	poll.Eventually(t, time.Minute, func() bool {
		c, err := history.Scan(ctx, b.env.ConfigDir, history.ScanOptions{Summary: true})
		if err != nil {
			return false
		}
		for _, r := range c.UsageBy(history.BySession, time.UTC) {
			if r.SessionID != sid(fg) && r.APICalls > 0 {
				bg = r
				return true
			}
		}
		return false
	}, "the background session's answer in history")
	sameCents(t, "the background session", bg.CostUSD, cost(fg))
	if bg.Unpriced || bg.APICalls != 1 {
		t.Errorf("background session row %+v, want one priced call", bg)
	}
	path, err := history.SessionPath(b.env.ConfigDir, b.dir, bg.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(md), `"sessionKind":"bg"`) {
		t.Errorf("the transcript at %s is not a bg session's (%v)", path, err)
	}
	var buf strings.Builder
	if err := history.Export(ctx, &buf, path, history.ExportOptions{Format: history.FormatMarkdown}); err != nil || !strings.Contains(buf.String(), "BACKGROUND-ANSWER") {
		t.Errorf("export of the background session (%v):\n%s", err, buf.String())
	}
}

// cli runs the CLI with args in the bed's repository (argv, its own process
// group) and returns its combined output; --bg and daemon print text, not
// stream-json.
func cli(t *testing.T, ctx context.Context, b *bed, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Dir, cmd.Env = b.dir, b.env.Environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("claude %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// stopDaemon stops the daemon --bg started (and the sessions it runs), and
// kills its supervisor should it outlive the request.
func stopDaemon(t *testing.T, b *bed) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli(t, ctx, b, "daemon", "stop", "--any")
	var st struct {
		SupervisorPid int `json:"supervisorPid"`
	}
	if data, err := os.ReadFile(filepath.Join(b.env.ConfigDir, "daemon.status.json")); err == nil && json.Unmarshal(data, &st) == nil && st.SupervisorPid > 0 {
		if !poll.Gone(t, st.SupervisorPid, 10*time.Second) {
			_ = syscall.Kill(st.SupervisorPid, syscall.SIGKILL)
			t.Errorf("the daemon (pid %d) outlived `claude daemon stop`", st.SupervisorPid)
		}
	}
	// The daemon keeps spare pty hosts for the next session; they end a
	// few seconds after the daemon, and one it spawned while stopping can
	// outlive it (seen on 2.1.332). They are this test's: their HOME is its
	// scratch HOME.
	for _, pid := range processesWithHome(b.env.Home) {
		if poll.Gone(t, pid, 10*time.Second) {
			continue
		}
		t.Logf("killing pid %d, left behind by the daemon", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !poll.Gone(t, pid, 10*time.Second) {
			t.Errorf("pid %d, left behind by the daemon, survives SIGKILL", pid)
		}
	}
}

// processesWithHome returns the live processes whose environment has
// HOME=home (/proc; a process that cannot be read is not one).
func processesWithHome(home string) []int {
	dirs, _ := os.ReadDir("/proc")
	want := []byte("\x00HOME=" + home + "\x00")
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), want) && poll.Running(pid) {
			out = append(out, pid)
		}
	}
	return out
}
