package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/jobfile"
)

// A server session with sandbox: true runs its CLI confined, like a job:
// its Bash tool cannot read the user's keys or write to their HOME, and
// its own worktree is writable.
func TestSessionSandbox(t *testing.T) {
	requireSandbox(t)
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		if r.HasToolResult() {
			return fakeapi.Text("tried")
		}
		return fakeapi.ToolUse(fakeapi.Bash(`cat "$HOME/.ssh/id_ed25519"; echo x > "$HOME/escaped.txt"; echo in > inside.txt`))
	})
	env := claudetest.NewEnv(t, api.URL)
	key := filepath.Join(env.Home, ".ssh", "id_ed25519")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("SESSION-SECRET-KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := &events{}
	s := openSession(t, env, repo, `{"name":"boxed","permission_mode":"bypassPermissions","sandbox":true}`, ev)
	if err := s.Send("go"); err != nil {
		t.Fatal(err)
	}
	ev.wait(t, "result", `"result":"tried"`)
	if strings.Contains(ev.String(), "SESSION-SECRET-KEY") {
		t.Error("the session read the user's key")
	}
	if _, err := os.Stat(filepath.Join(env.Home, "escaped.txt")); err == nil {
		t.Error("the session wrote to the user's HOME")
	}
	if _, err := os.Stat(filepath.Join(s.State().Worktree, "inside.txt")); err != nil {
		t.Errorf("the session's own worktree write did not land: %v", err)
	}
}

func TestSessionSandboxErrors(t *testing.T) {
	_, err := jobfile.DecodeSession([]byte(`{"sandbox":{"network":["a b"]}}`))
	if err == nil || !strings.Contains(err.Error(), `sandbox: sandbox.network: "a b" is not a host`) {
		t.Errorf("error %v, want the bad network entry at field sandbox", err)
	}
}
