package runner_test

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/boxtest"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
	"github.com/pneuma-cli/pneuma/report"
)

// requireSandbox fails the test in CI when bubblewrap cannot run here, and
// skips it elsewhere.
func requireSandbox(t *testing.T) { t.Helper(); boxtest.Require(t, "the sandbox escape suite") }

// countingServer accepts on host loopback, answers "pong" to a line, and
// counts connections.
type countingServer struct {
	port     int
	accepted chan struct{}
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	s := &countingServer{port: ln.Addr().(*net.TCPAddr).Port, accepted: make(chan struct{}, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted <- struct{}{}
			go func() {
				defer c.Close()
				_, _ = bufio.NewReader(c).ReadString('\n')
				_, _ = c.Write([]byte("pong\n"))
			}()
		}
	}()
	return s
}

// escapeWorld is what the escapes aim at, all outside the job's worktree.
type escapeWorld struct {
	repo, home, scratch, remote, other, bgDir, tmpFile, marker, base string
	sharedObject                                                     string // a loose object file of the repository's shared store
	sshKey, awsKey                                                   string
	listed, unlisted                                                 *countingServer
	victimMark                                                       string // in the environ of the run's other job
	victimPID                                                        int    // that job's CLI, once the escape job has looked
}

func newEscapeWorld(t *testing.T, b *bed) *escapeWorld {
	t.Helper()
	w := &escapeWorld{repo: claudetest.GitRepo(t), home: b.env.Home, scratch: t.TempDir(),
		sshKey: "SSH-SECRET-" + rand.Text(), awsKey: "AWS-SECRET-" + rand.Text(), marker: "pneuma-escape-" + rand.Text()}
	w.remote = filepath.Join(w.scratch, "remote.git")
	claudetest.Git(t, w.scratch, "init", "-q", "--bare", w.remote)
	claudetest.Git(t, w.repo, "remote", "add", "origin", w.remote)
	w.other = filepath.Join(w.repo, ".pneuma", "worktrees", "e2e", "other-job")
	w.bgDir = filepath.Join(w.scratch, "bg")
	w.tmpFile = filepath.Join(os.TempDir(), w.marker)
	t.Cleanup(func() { _ = os.Remove(w.tmpFile) })
	for path, content := range map[string]string{
		filepath.Join(w.home, ".ssh", "id_ed25519"):       w.sshKey,
		filepath.Join(w.home, ".aws", "credentials"):      w.awsKey,
		filepath.Join(w.home, ".claude", "settings.json"): `{"env":{"USER_SETTING":"1"}}`,
		filepath.Join(w.home, ".claude.json"):             `{"numStartups":1}`,
		filepath.Join(w.other, "README.md"):               "another job's worktree\n",
		filepath.Join(w.bgDir, ".keep"):                   "",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Another job's branch of the same run only in packed-refs, and one
	// beside the job's own ref.
	claudetest.Git(t, w.repo, "branch", "pneuma/e2e/packed-job")
	claudetest.Git(t, w.repo, "pack-refs", "--all")
	claudetest.Git(t, w.repo, "branch", "pneuma/e2e/other-job")
	w.base = claudetest.Git(t, w.repo, "rev-parse", "main")
	// A loose object of the shared store that nothing needs, for the agent
	// to delete.
	cmd := exec.Command("git", "-C", w.repo, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader("shared " + rand.Text() + "\n")
	id, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	obj := strings.TrimSpace(string(id))
	w.sharedObject = filepath.Join(w.repo, ".git", "objects", obj[:2], obj[2:])
	w.listed, w.unlisted = newCountingServer(t), newCountingServer(t)
	w.victimMark = "PNEUMA_VICTIM=" + rand.Text()
	return w
}

// findCLI waits for the process running cli whose environment holds mark:
// a job's CLI, seen from outside any sandbox.
func findCLI(t *testing.T, cli, mark string) int {
	t.Helper()
	pid := 0
	poll.Until(time.Minute, func() bool {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			n, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			argv0, _, _ := strings.Cut(string(cmdline), "\x00")
			if argv0 == cli && strings.Contains("\x00"+string(environ)+"\x00", "\x00"+mark+"\x00") {
				pid = n
				return true
			}
		}
		return false
	})
	if pid == 0 {
		t.Errorf("the victim job's CLI (%s with %s) did not start", cli, mark)
	}
	return pid
}

// plantedHooks are the hooks the agent plants: whatever pneuma's commit,
// finish and publish steps could run.
const plantedHooks = "pre-commit prepare-commit-msg commit-msg post-commit post-checkout post-merge post-rewrite pre-push reference-transaction pre-auto-gc post-index-change"

// script is one Bash call that tries every escape and prints, for each,
// "<name>=ok" when it got through.
func (w *escapeWorld) script() string {
	tcp := func(port int) string {
		return fmt.Sprintf(`(exec 3<>/dev/tcp/127.0.0.1/%d && echo ping >&3 && head -n1 <&3) 2>/dev/null`, port)
	}
	lines := []string{
		`echo inside > inside.txt && git add inside.txt && git commit -q -m inside && echo commit=ok`,
		`echo staged > staged.txt && git add staged.txt`, // a blob git add wrote, for pneuma to commit
		`for o in ` + w.sharedObject + ` /run/pneuma/objects` + w.sharedObject + `; do chmod u+w $o; rm -f $o; done 2>/dev/null`,
		`echo x > ` + filepath.Join(w.other, "escaped.txt") + ` && echo other-worktree=ok`,
		`(mount -o remount,rw,bind ` + w.repo + ` 2>/dev/null; echo x > ` + filepath.Join(w.repo, "remounted.txt") + `) && echo remount=ok`,
		`(unshare -Urm sh -c 'mount -o remount,rw,bind ` + w.repo + ` 2>/dev/null; echo x > ` + filepath.Join(w.repo, "nested.txt") + `' || echo x > ` + filepath.Join(w.repo, "nested.txt") + `) && echo nested-userns=ok`,
		`git update-ref refs/heads/pneuma/e2e/other-job HEAD && echo other-branch=ok`,
		`git update-ref refs/heads/main HEAD && echo main-branch=ok`,
		`git update-ref refs/heads/pneuma/e2e/packed-job HEAD && echo packed-branch=ok`,
		`git update-ref refs/heads/pneuma/e2e/new-job HEAD && echo new-branch=ok`,
		`echo x > "$HOME/escaped.txt" && echo home=ok`,
		`echo x > ` + w.tmpFile + ` && echo tmp=ok`,
		`cat "$HOME/.ssh/id_ed25519" "$HOME/.aws/credentials"; echo`,
		tcp(w.listed.port) + ` | grep -q pong && echo listed-port=ok`,
		tcp(w.unlisted.port) + ` | grep -q pong && echo unlisted-port=ok`,
		`curl -s -m 3 -o /dev/null http://203.0.113.7/ ; true`,
		`kill -0 ` + strconv.Itoa(os.Getpid()) + ` 2>/dev/null && echo signal-pneuma=$((40+2))`,
		`git push -q ` + w.remote + ` HEAD:refs/heads/escaped 2>/dev/null && echo push=ok`,
		// Planted last, after the agent's own git commands: a hook or
		// fsmonitor that runs from here on was run by pneuma's git.
		`git config --file ` + filepath.Join(w.repo, ".git", "config") + ` core.fsmonitor "touch ` + filepath.Join(w.scratch, "fsmonitor-ran") + `" && echo repo-config=ok`,
		`mkdir -p hooks-planted && for h in ` + plantedHooks + `; do printf '#!/bin/sh\ntouch ` + filepath.Join(w.scratch, "hook-ran") + `-$(basename "$0")\n' > hooks-planted/$h; chmod +x hooks-planted/$h; done`,
		`cp hooks-planted/* ` + filepath.Join(w.repo, ".git", "hooks") + `/ && echo repo-hook=ok`,
		`git config extensions.worktreeConfig true && git config --worktree core.hooksPath "$PWD/hooks-planted" && git config --worktree core.fsmonitor "touch ` + filepath.Join(w.scratch, "fsmonitor-ran") + `-worktree" && echo worktree-config=ok`,
		`echo leftover > leftover.txt`, // for pneuma to commit
		// After the plants: without the sandbox pneuma finishes the
		// victim, committing its leftover, with the plants in place.
		`kill -9 ` + strconv.Itoa(w.victimPID) + ` 2>/dev/null && echo kill-other=ok`,
		`nohup env -u PNEUMA_CLAUDE_MARKER setsid sh -c 'sleep 60; echo alive > ` + filepath.Join(w.bgDir, "alive") + `' ` + w.marker + ` >/dev/null 2>&1 < /dev/null &`,
		`echo done`,
	}
	return strings.Join(lines, "\n")
}

// escapes reports, per escape, whether it got through, judged outside.
func (w *escapeWorld) escapes(t *testing.T, stream string) map[string]bool {
	t.Helper()
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	data, err := os.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(w.repo, ".git", "config"))
	got := map[string]bool{
		"other-worktree":  exists(filepath.Join(w.other, "escaped.txt")),
		"home":            exists(filepath.Join(w.home, "escaped.txt")),
		"tmp":             exists(w.tmpFile),
		"read-ssh-key":    strings.Contains(string(data), w.sshKey),
		"read-aws-creds":  strings.Contains(string(data), w.awsKey),
		"repo-config":     strings.Contains(string(cfg), "fsmonitor"),
		"repo-hook":       exists(filepath.Join(w.repo, ".git", "hooks", "post-commit")),
		"worktree-config": strings.Contains(strings.ToLower(string(cfg)), "worktreeconfig"),
		"unlisted-port":   len(w.unlisted.accepted) > 0,
		"signal-pneuma":   strings.Contains(string(data), "signal-pneuma=42"), // the script holds the expression, not its value
		"push":            gitOK(w.remote, "rev-parse", "--verify", "-q", "refs/heads/escaped"),
		"background":      processWithArg(w.marker),
		"verify-home":     exists(filepath.Join(w.home, "verify-escaped.txt")),
		"remount":         exists(filepath.Join(w.repo, "remounted.txt")),
		"nested-userns":   exists(filepath.Join(w.repo, "nested.txt")),
		"other-branch":    claudetest.Git(t, w.repo, "rev-parse", "pneuma/e2e/other-job") != w.base,
		"main-branch":     claudetest.Git(t, w.repo, "rev-parse", "main") != w.base,
		"packed-branch":   claudetest.Git(t, w.repo, "rev-parse", "pneuma/e2e/packed-job") != w.base,
		"new-branch":      gitOK(w.repo, "rev-parse", "--verify", "-q", "refs/heads/pneuma/e2e/new-job"),
		"shared-objects":  !exists(w.sharedObject),
	}
	return got
}

func gitOK(dir string, args ...string) bool {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	return cmd.Run() == nil
}

// processWithArg reports whether a live process has arg on its command line
// (and kills it: nothing outlives the test).
func processWithArg(arg string) bool {
	entries, _ := os.ReadDir("/proc")
	found := false
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), arg) {
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return found
}

// TestSandboxEscapes runs the escape suite on the real CLI in
// bypassPermissions, two jobs in one run (the escape job, and a victim whose
// CLI it tries to kill): with the sandbox every escape fails and the job
// still finishes and commits on its branch; without it every escape
// succeeds (so the suite can tell). Either way, the hooks and fsmonitor the
// agent plants never run in pneuma's own git.
func TestSandboxEscapes(t *testing.T) {
	requireSandbox(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandbox=%v", sandboxed), func(t *testing.T) {
			b := newBed(t)
			w := newEscapeWorld(t, b)
			homeBefore := snapshot(t, w.home)
			b.jobs["VICTIM-TOKEN"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
				if !r.HasToolResult() { // alive until the escape job has tried to kill it
					return fakeapi.ToolUse(fakeapi.Bash(`for i in $(seq 1200); do [ -e escape-done ] && break; sleep 0.1; done; echo waited`))
				}
				return fakeapi.Text("still alive")
			}
			b.jobs["ESCAPE-TOKEN"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
				switch {
				case !r.HasToolResult():
					w.victimPID = findCLI(t, b.bin, w.victimMark)
					// A leftover of the victim's, for pneuma to commit.
					if err := os.WriteFile(filepath.Join(b.dirs["VICTIM-TOKEN"], "victim-leftover.txt"), nil, 0o644); err != nil {
						t.Error(err)
					}
					return fakeapi.ToolUse(fakeapi.Bash(w.script()))
				case !r.Contains("mcp-ok"):
					if err := os.WriteFile(filepath.Join(b.dirs["VICTIM-TOKEN"], "escape-done"), nil, 0o644); err != nil {
						t.Error(err)
					}
					return fakeapi.ToolUse(fakeapi.Tool("mcp__probe__ping", map[string]any{}))
				}
				return fakeapi.Text("tried every escape")
			}
			sb, victimSB := "false", "false"
			if sandboxed {
				sb = fmt.Sprintf("{network: [\"127.0.0.1:%d\"], write: [%q]}", w.listed.port, w.bgDir)
				victimSB = "true"
			}
			mark, value, _ := strings.Cut(w.victimMark, "=")
			p := b.plan(w.repo, fmt.Sprintf(`version: 1
concurrency: 2
jobs:
  - name: escape
    prompt: ESCAPE-TOKEN try to get out
    permission_mode: bypassPermissions
    sandbox: %s
    mcp_config: '%s'
    expect: {mcp: true}
    verify:
      command: [sh, -c, "echo v > %s; true"]
  - name: victim
    prompt: VICTIM-TOKEN wait for the other job
    permission_mode: bypassPermissions
    sandbox: %s
    env: {%s: %q}
`, sb, w.mcpConfig(t), filepath.Join(w.home, "verify-escaped.txt"), victimSB, mark, value))
			rep := b.run(p)
			res := jobByName(t, rep, "escape")
			if res.Status != report.StatusSucceeded {
				t.Fatalf("job %s (%s): %s", res.Status, res.Reason, res.Error)
			}
			got := w.escapes(t, res.Stream)
			victim := jobByName(t, rep, "victim")
			got["kill-other"] = victim.Status != report.StatusSucceeded // its CLI was killed
			if sandboxed && victim.Status != report.StatusSucceeded {
				t.Errorf("victim job %s (%s): %s", victim.Status, victim.Reason, victim.Error)
			}
			// pneuma's own git (the leftover commits, finish) never ran
			// what the agent planted, with or without the sandbox.
			for _, m := range []string{"hook-ran-*", "fsmonitor-ran*"} {
				if ran, _ := filepath.Glob(filepath.Join(w.scratch, m)); len(ran) > 0 {
					t.Errorf("a planted hook or fsmonitor ran: %v", ran)
				}
			}
			// pneuma's commit step ran after the plants: on the victim's
			// branch always, on the escape job's when the sandbox kept its
			// worktree's git metadata whole (without it, pneuma sees the
			// changed worktree config and leaves the worktree alone).
			if log := claudetest.Git(t, w.repo, "log", "--format=%s", "--name-only", "pneuma/e2e/victim"); !strings.Contains(log, "victim-leftover.txt") {
				t.Errorf("pneuma did not commit the victim's leftover after the plants: %q", log)
			}
			if log := claudetest.Git(t, w.repo, "log", "--format=%s", "--name-only", "pneuma/e2e/escape"); sandboxed && (!strings.Contains(log, "leftover.txt") || !strings.Contains(log, "staged.txt")) {
				t.Errorf("pneuma did not commit the agent's leftover and what it staged after the plants: %q", log)
			}
			if !sandboxed && !strings.Contains(res.Error, "its git metadata changed") {
				t.Errorf("without the sandbox, pneuma's finish did not notice the planted worktree config: %q", res.Error)
			}
			if data, err := os.ReadFile(res.Stream); err == nil && testing.Verbose() {
				t.Logf("stream: %s", data)
			}
			listed := len(w.listed.accepted) > 0
			t.Logf("escapes: %v, listed port reached: %v; escape job's error %q, warnings %+v", got, listed, res.Error, res.Warnings)
			for name, escaped := range got {
				if escaped == sandboxed {
					t.Errorf("%s: escaped=%v with sandbox=%v", name, escaped, sandboxed)
				}
			}
			if !listed {
				t.Error("the listed port was not reached")
			}
			if data, _ := os.ReadFile(res.Stream); !strings.Contains(string(data), `"mcp-ok"`) {
				t.Error("the job's MCP server did not answer its tool call")
			}
			if len(res.Verify) != 1 || !res.Verify[0].Passed {
				t.Errorf("verify rounds %+v, want one that passed", res.Verify)
			}
			if log := claudetest.Git(t, w.repo, "log", "--format=%s", "pneuma/e2e/escape"); !strings.Contains(log, "inside") {
				t.Errorf("the agent's own commit is not on its branch: %q", log)
			}
			if !sandboxed {
				if res.Sandbox != nil {
					t.Errorf("report.sandbox = %+v for a job without one", res.Sandbox)
				}
				return
			}
			claudetest.Git(t, w.repo, "fsck", "--strict", "--no-dangling") // the shared store whole, the job's objects in it
			if locks, _ := filepath.Glob(filepath.Join(w.repo, ".git", "refs", "heads", "pneuma", "e2e", "*.lock")); len(locks) > 0 {
				t.Errorf("a failed ref update left %v behind", locks)
			}
			if after := snapshot(t, w.home); after != homeBefore {
				t.Errorf("the user's HOME changed in a sandboxed run:\nbefore %s\nafter  %s", homeBefore, after)
			}
			if res.Sandbox == nil || res.Sandbox.RefusedCount == 0 || res.Sandbox.Refused[0].Host != "203.0.113.7:80" {
				t.Errorf("report.sandbox = %+v, want the refused 203.0.113.7:80", res.Sandbox)
			}
			if len(res.Warnings) != 1 || res.Warnings[0].Code != report.WarnSandboxRefused || !strings.Contains(res.Warnings[0].Message, "203.0.113.7:80 (1)") {
				t.Errorf("warnings %+v, want one sandbox_refused naming 203.0.113.7:80", res.Warnings)
			}
			if res.Sandbox.DeniedWrites == 0 || res.Sandbox.DeniedReads == 0 {
				t.Errorf("report.sandbox denied %+v (reads %d, writes %d), want the escapes' refused writes and reads",
					res.Sandbox.Denied, res.Sandbox.DeniedReads, res.Sandbox.DeniedWrites)
			}
			if res.Transcript == "" {
				t.Error("no transcript archived from the sandbox's config dir")
			}
		})
	}
}

// mcpConfig names this test binary as the job's MCP server.
func (w *escapeWorld) mcpConfig(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"mcpServers":{"probe":{"command":%q,"env":{%q:"1"}}}}`, self, mcpServerEnv)
}

// snapshot lists every file under dir with its size and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s=%q;", strings.TrimPrefix(p, dir), data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A sandboxed job that runs past its timeout is stopped like any other
// (the timeout leaves the CLI, slow to start on a loaded machine, time to
// send its request):
// the interrupt reaches the CLI through the sandbox, and the job ends
// with reason timeout, a result line and its transcript.
func TestSandboxedTimeout(t *testing.T) {
	requireSandbox(t)
	b := newBed(t)
	b.jobs["SLOW-TOKEN"] = func(r *fakeapi.Request, dir string) fakeapi.Response { return fakeapi.Hang() }
	p := b.plan(claudetest.GitRepo(t), `version: 1
jobs:
  - name: slow
    prompt: SLOW-TOKEN wait
    timeout: 10s
    sandbox: true
`)
	start := time.Now()
	res := jobByName(t, b.run(p), "slow")
	if res.Status != report.StatusFailed || res.Reason != report.ReasonTimeout {
		t.Fatalf("job %s (%s), want failed (timeout): %s", res.Status, res.Reason, res.Error)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the stop took %v", d)
	}
	data, _ := os.ReadFile(res.Stream)
	if !strings.Contains(string(data), `"type":"result"`) {
		t.Errorf("no result line: the CLI was killed instead of interrupted:\n%s", data)
	}
	if res.Sandbox == nil {
		t.Fatal("the report does not say the job ran sandboxed")
	}
	t.Logf("cli_ms %d, refused %+v", res.Timings.CLIMS, res.Sandbox.Refused)
}

// TestRealCLISandboxShowsOnlyTheCLI: the real CLI installed as one file in
// $HOME (a copy in ~/bin; the native installer's ~/.local/bin/claude
// symlink to ~/.local/share/claude/versions/X) runs sandboxed by that path,
// and the files beside it are not readable inside (issue 22: nothing of
// $HOME beyond the CLI and its credentials).
func TestRealCLISandboxShowsOnlyTheCLI(t *testing.T) {
	requireSandbox(t)
	for _, layout := range []string{"bin", "native"} {
		t.Run(layout, func(t *testing.T) {
			b := newBed(t)
			home := b.env.Home
			var file, binary string
			var siblings []string
			switch layout {
			case "bin":
				file = filepath.Join(home, "bin", "claude")
				binary = file
				siblings = []string{filepath.Join(home, "bin", "sibling-secret")}
			case "native":
				file = filepath.Join(home, ".local", "share", "claude", "versions", "9.9.9")
				binary = filepath.Join(home, ".local", "bin", "claude")
				siblings = []string{filepath.Join(home, ".local", "share", "claude", "versions", "sibling-secret"),
					filepath.Join(home, ".local", "bin", "sibling-secret")}
			}
			linkCLI(t, b.bin, file)
			if binary != file {
				if err := os.MkdirAll(filepath.Dir(binary), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join("..", "share", "claude", "versions", "9.9.9"), binary); err != nil {
					t.Fatal(err)
				}
			}
			secret := "SIBLING-SECRET-" + rand.Text()
			for _, s := range siblings {
				if err := os.WriteFile(s, []byte(secret), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			b.bin = binary
			repo := claudetest.GitRepo(t)
			b.jobs["SIBLING-TOKEN"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
				if !r.HasToolResult() {
					cmd := "cat " + strings.Join(siblings, " ") + " 2>/dev/null; ls -a " + filepath.Dir(binary) + " " + filepath.Dir(file) + " | sed s/^/entry:/; echo looked"
					return fakeapi.ToolUse(fakeapi.Bash(cmd))
				}
				return fakeapi.Text("looked beside the CLI")
			}
			rep := b.run(b.plan(repo, "version: 1\njobs:\n  - name: sibling\n    prompt: SIBLING-TOKEN read beside the CLI\n    permission_mode: bypassPermissions\n    sandbox: true\n"))
			j := rep.Jobs[0]
			if j.Status != report.StatusSucceeded {
				t.Fatalf("job %s (%s): %s", j.Status, j.Reason, j.Error)
			}
			stream := readStream(t, j)
			if !strings.Contains(stream, "looked") || !strings.Contains(stream, "entry:claude") {
				t.Fatalf("the Bash call did not run, or did not list the CLI beside its siblings:\n%s", stream)
			}
			if strings.Contains(stream, secret) || strings.Contains(stream, "entry:sibling-secret") {
				t.Errorf("a file beside the CLI was seen inside the sandbox:\n%s", stream)
			}
		})
	}
}

// linkCLI puts the CLI at path as one file: a hard link when it can (the
// CLI is hundreds of MB), else a copy.
func linkCLI(t *testing.T, cli, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(cli)
	if err != nil {
		t.Fatal(err)
	}
	if os.Link(real, path) == nil {
		return
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxHeadTampered: the worktree's record in the repository is
// writable inside the sandbox (git there commits through it), HEAD
// included. An agent that points HEAD at main and leaves a file
// uncommitted must not get pneuma's own commit of the leftovers, run
// outside after the job, onto main: the finish refuses the worktree and
// keeps the work where it is.
func TestSandboxHeadTampered(t *testing.T) {
	requireSandbox(t)
	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandbox=%v", sandboxed), func(t *testing.T) {
			b := newBed(t)
			repo := claudetest.GitRepo(t)
			main := claudetest.Git(t, repo, "rev-parse", "main")
			b.jobs["HEAD-TOKEN"] = func(r *fakeapi.Request, dir string) fakeapi.Response {
				if !r.HasToolResult() {
					return fakeapi.ToolUse(fakeapi.Bash(`echo left > left.txt && echo 'ref: refs/heads/main' > "$(git rev-parse --git-dir)/HEAD" && echo head=ok`))
				}
				return fakeapi.Text("pointed HEAD at main")
			}
			rep := b.run(b.plan(repo, fmt.Sprintf("version: 1\njobs:\n  - name: head\n    prompt: HEAD-TOKEN move main\n    permission_mode: bypassPermissions\n    sandbox: %v\n", sandboxed)))
			j := rep.Jobs[0]
			if stream := readStream(t, j); !strings.Contains(stream, "head=ok") {
				t.Fatalf("the agent could not write HEAD (the test cannot fail):\n%s", stream)
			}
			if got := claudetest.Git(t, repo, "rev-parse", "main"); got != main {
				log := claudetest.Git(t, repo, "log", "--format=%s", "--name-only", "-1", "main")
				t.Fatalf("pneuma's commit of the leftovers moved main from %s to %s: %q", main, got, log)
			}
			if !strings.Contains(j.Error, "its git metadata changed") || !strings.Contains(j.Error, "not its branch") {
				t.Errorf("the job's error %q does not say its HEAD was changed", j.Error)
			}
			if j.Worktree == "" {
				t.Fatal("the tampered worktree was not kept")
			}
			if data, err := os.ReadFile(filepath.Join(j.Worktree, "left.txt")); err != nil || string(data) != "left\n" {
				t.Errorf("the agent's leftover was not kept: %q, %v", data, err)
			}
		})
	}
}
