package serve_test

// The security review's findings (issue 26) and the input-check order
// (issue 20, Ask 5), each reproduced against a real `pneuma serve` process
// over real HTTP and WebSocket clients.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pneuma-cli/pneuma/internal/testbed/boxtest"
	"github.com/pneuma-cli/pneuma/internal/testbed/claudetest"
	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
	"github.com/pneuma-cli/pneuma/internal/testbed/poll"
)

const (
	readToken    = "read-token-0123456789abcdef"
	operateToken = "operate-token-0123456789abcdef"
)

// startServerArgs is startServer with more flags, the read and operate
// tokens, and the access log in a file.
func startServerArgs(t *testing.T, env *claudetest.Env, root string, extra ...string) *server {
	t.Helper()
	dir := t.TempDir()
	write := func(name, tok string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s := &server{t: t, env: env.Environ(), dir: root, pids: map[int]bool{},
		args: append([]string{"serve", "--addr", "127.0.0.1:0", "--state-dir", t.TempDir(), "--root", root,
			"--token-file", write("token", e2eToken), "--read-token-file", write("read", readToken),
			"--operate-token-file", write("operate", operateToken),
			"--access-log", filepath.Join(dir, "access.log"),
			"--claude", claudetest.Binary(t), "--max-sessions", "4"}, extra...)}
	s.start()
	t.Cleanup(s.cleanup)
	return s
}

// accessLog is the server's access log so far.
func (s *server) accessLog() string {
	for i, a := range s.args {
		if a == "--access-log" {
			data, _ := os.ReadFile(s.args[i+1])
			return string(data)
		}
	}
	return ""
}

// req sends a request with a token (none if "") and extra headers.
func (s *server) req(token, method, path string, body string, hdr map[string]string) (*http.Response, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v\nserver stderr:\n%s", method, path, err, firstPanic(s.stderr.String()))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, data
}

// idleAPI answers every request with a short text.
func idleAPI(t *testing.T) *fakeapi.Server {
	return fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("ok") })
}

// Finding 2 + 5: a prompt_file or output_schema of /dev/zero, a FIFO, a
// file too large or outside the roots gets a 4xx at once; the server
// stays up and small.
func TestE2EClientFiles(t *testing.T) {
	repo := claudetest.GitRepo(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("PLANTED-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(repo, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(repo, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("x"), 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(repo, "link.txt")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, claudetest.NewEnv(t, idleAPI(t).URL), repo)
	rel, _ := filepath.Rel(repo, secret)
	for _, tc := range []struct {
		field, value string
		want         int
	}{
		{"prompt_file", "/dev/zero", 403},
		{"output_schema", "/dev/zero", 403},
		{"prompt_file", fifo, 400},
		{"output_schema", fifo, 400},
		{"prompt_file", big, 400},
		{"prompt_file", secret, 403},
		{"prompt_file", rel, 403},
		{"output_schema", rel, 403},
		{"prompt_file", link, 403},
	} {
		jobs := fmt.Sprintf("version: 1\njobs:\n  - name: a\n    repo: %s\n    %s: %s\n", repo, tc.field, tc.value)
		if tc.field == "output_schema" {
			jobs += "    prompt: hi\n"
		}
		done := make(chan struct{})
		var code int
		var body []byte
		go func() {
			defer close(done)
			var resp *http.Response
			resp, body = s.req(e2eToken, "POST", "/api/runs", jsonString(map[string]string{"jobs_yaml": jobs}), nil)
			code = resp.StatusCode
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s %s: no answer (the handler blocked)", tc.field, tc.value)
		}
		if code != tc.want || bytes.Contains(body, []byte("PLANTED")) {
			t.Errorf("%s %s: %d %s, want %d", tc.field, tc.value, code, body, tc.want)
		}
	}
	// jobs_file: the same checks.
	for _, tc := range []struct {
		path string
		want int
	}{{"/dev/zero", 403}, {fifo, 400}, {big, 400}, {secret, 403}, {link, 403}, {filepath.Join(repo, "missing.yaml"), 400}} {
		resp, body := s.req(e2eToken, "POST", "/api/runs", jsonString(map[string]string{"jobs_file": tc.path}), nil)
		if resp.StatusCode != tc.want || bytes.Contains(body, []byte("PLANTED")) || tc.path != secret && bytes.Contains(body, []byte(outside)) {
			t.Errorf("jobs_file %s: %d %s, want %d", tc.path, resp.StatusCode, body, tc.want)
		}
	}
	if resp, _ := s.req("", "GET", "/healthz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("the server is down: %d\n%s", resp.StatusCode, s.stderr)
	}
	if rss := processRSS(s.cmd.Process.Pid); rss > 400<<20 {
		t.Errorf("server RSS %d MiB after the file checks", rss>>20)
	}
}

// processRSS is a process's resident set in bytes.
func processRSS(pid int) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	return 0
}

// Issue 20 Ask 5: a repository outside the roots is a 403 before anything
// touches it (no existence oracle, no symlink target); a missing one or
// one that is not a repository under a root is a 400; never a 500.
func TestE2EInputOrder(t *testing.T) {
	repo := claudetest.GitRepo(t)
	root := filepath.Dir(repo)
	notRepo := filepath.Join(root, "plain")
	if err := os.MkdirAll(notRepo, 0o755); err != nil {
		t.Fatal(err)
	}
	outside, err := os.MkdirTemp("", "pneuma-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	link := filepath.Join(repo, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, claudetest.NewEnv(t, idleAPI(t).URL), root)
	for _, tc := range []struct {
		repo string
		want int
	}{
		{"/", 403}, {"/nonexistent", 403}, {"/etc", 403}, {"/root/.ssh", 403},
		{filepath.Join(repo, "..", "..", "etc"), 403}, {link, 403},
		{filepath.Join(repo, "missing"), 400}, {filepath.Join(root, "nothing-here"), 400}, {notRepo, 400},
	} {
		for _, route := range []string{"/api/sessions", "/api/runs"} {
			body := jsonString(map[string]string{"repo": tc.repo})
			if route == "/api/runs" {
				body = jsonString(map[string]string{"jobs_yaml": fmt.Sprintf("version: 1\njobs:\n  - name: a\n    prompt: hi\n    repo: %s\n", tc.repo)})
			}
			resp, data := s.req(e2eToken, "POST", route, body, nil)
			if resp.StatusCode != tc.want {
				t.Errorf("%s repo %s: %d %s, want %d", route, tc.repo, resp.StatusCode, data, tc.want)
			}
			if bytes.Contains(data, []byte(outside)) || tc.want == 403 && bytes.Contains(data, []byte("no such file")) {
				t.Errorf("%s repo %s tells what is on disk: %s", route, tc.repo, data)
			}
		}
	}
}

// Finding 4, Ask 2: every field that reaches the host is refused with a
// 403 naming it, unless the operator allows it; permission modes outside
// the allowed set too.
func TestE2EPolicy(t *testing.T) {
	repo := claudetest.GitRepo(t)
	s := startServerArgs(t, claudetest.NewEnv(t, idleAPI(t).URL), repo)
	job := func(extra string) string {
		return jsonString(map[string]string{"jobs_yaml": fmt.Sprintf("version: 1\njobs:\n  - name: ok\n    prompt: hi\n  - name: a\n    prompt: hi\n    repo: %s\n%s", repo, extra)})
	}
	for _, tc := range []struct{ body, field string }{
		{job("    verify: {command: [touch, /tmp/pwned]}\n"), "jobs[1].verify"},
		{job("    extra_args: [--mcp-config, /tmp/x.json]\n"), "jobs[1].extra_args"},
		{job("    mcp_config: '{\"mcpServers\":{}}'\n"), "jobs[1].mcp_config"},
		{job("    settings: '{\"hooks\":{}}'\n"), "jobs[1].settings"},
		{job("    env: {ANTHROPIC_BASE_URL: http://evil.example}\n"), "jobs[1].env"},
		{job("    env: {PATH: /tmp}\n"), "jobs[1].env"},
		{job("    add_dirs: [/etc]\n"), "jobs[1].add_dirs"},
		{job("    worktree: false\n"), "jobs[1].worktree"},
		{job("    push: true\n"), "jobs[1].push"},
		{job("    remote: origin\n"), "jobs[1].remote"},
		{job("    pull_request: {title: x}\n"), "jobs[1].pull_request"},
		{job("    permission_mode: bypassPermissions\n"), "jobs[1].permission_mode"},
		{jsonString(map[string]string{"jobs_yaml": "version: 1\ndefaults:\n  verify: {command: [id]}\njobs:\n  - name: a\n    prompt: hi\n"}), "defaults.verify"},
		{jsonString(map[string]any{"repo": repo, "env": map[string]string{"ANTHROPIC_BASE_URL": "http://evil.example"}}), "env"},
		{jsonString(map[string]any{"repo": repo, "mcp_config": `{"mcpServers":{"x":{"command":"touch","args":["/tmp/pwned"]}}}`}), "mcp_config"},
		{jsonString(map[string]any{"repo": repo, "settings": `{"hooks":{"SessionStart":[]}}`}), "settings"},
		{jsonString(map[string]any{"repo": repo, "add_dirs": []string{"/"}}), "add_dirs"},
		{jsonString(map[string]any{"repo": repo, "worktree": false}), "worktree"},
		{jsonString(map[string]any{"repo": repo, "permission_mode": "bypassPermissions"}), "permission_mode"},
	} {
		route := "/api/runs"
		if !strings.Contains(tc.body, "jobs_yaml") {
			route = "/api/sessions"
		}
		for _, tok := range []string{e2eToken, operateToken} {
			resp, data := s.req(tok, "POST", route, tc.body, nil)
			var ae struct {
				Problems []struct{ Field string }
			}
			_ = json.Unmarshal(data, &ae)
			if resp.StatusCode != 403 || len(ae.Problems) != 1 || ae.Problems[0].Field != tc.field {
				t.Errorf("%s %s: %d %s, want 403 naming %s", route, tc.body, resp.StatusCode, data, tc.field)
			}
		}
	}
	// Names: bounded, no control characters (they reach commit messages).
	for _, name := range []string{strings.Repeat("n", 201), "fix\n\nSigned-off-by: someone", "a\x00b"} {
		resp, data := s.req(e2eToken, "POST", "/api/sessions", jsonString(map[string]string{"repo": repo, "name": name}), nil)
		if resp.StatusCode != 400 {
			t.Errorf("session name %q: %d %s, want 400", name, resp.StatusCode, data)
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Errorf("/tmp/pwned exists")
	}
}

// The operator opens the policy: the same fields are then accepted.
func TestE2EPolicyOpened(t *testing.T) {
	repo := claudetest.GitRepo(t)
	s := startServerArgs(t, claudetest.NewEnv(t, idleAPI(t).URL), repo,
		"--client-allow", "env", "--client-permission-mode", "bypassPermissions", "--client-permission-mode", "default")
	var o session
	s.must(201, "POST", "/api/sessions", jsonString(map[string]any{"repo": repo, "env": map[string]string{"FOO": "1"}, "permission_mode": "default"}), &o)
	s.must(200, "DELETE", "/api/sessions/"+o.ID, nil, nil)
	resp, data := s.req(e2eToken, "POST", "/api/sessions", jsonString(map[string]any{"repo": repo, "permission_mode": "acceptEdits"}), nil)
	if resp.StatusCode != 403 {
		t.Errorf("acceptEdits, not in the operator's set: %d %s", resp.StatusCode, data)
	}
}

// Scoped tokens: read watches, operate acts, history is the operator's;
// the access log names the scope and never a token.
func TestE2ETokenScopes(t *testing.T) {
	repo := claudetest.GitRepo(t)
	s := startServerArgs(t, claudetest.NewEnv(t, idleAPI(t).URL), repo, "--max-jobs", "4")
	for _, tc := range []struct {
		token, method, path, body string
		want                      int
	}{
		{readToken, "GET", "/api/sessions", "", 200},
		{readToken, "GET", "/api/runs", "", 200},
		{readToken, "POST", "/api/sessions", jsonString(map[string]string{"repo": repo}), 403},
		{readToken, "POST", "/api/runs", jsonString(map[string]string{"jobs_yaml": "version: 1\njobs: [{name: a, prompt: hi}]"}), 403},
		{readToken, "GET", "/api/history/sessions", "", 403},
		{operateToken, "GET", "/api/history/usage", "", 403},
		{e2eToken, "GET", "/api/history/usage", "", 200},
	} {
		if resp, data := s.req(tc.token, tc.method, tc.path, tc.body, nil); resp.StatusCode != tc.want {
			t.Errorf("%s %s with %s: %d %s, want %d", tc.method, tc.path, tc.token[:4], resp.StatusCode, data, tc.want)
		}
	}
	resp, data := s.req(operateToken, "POST", "/api/sessions", jsonString(map[string]string{"repo": repo}), nil)
	var o session
	if resp.StatusCode != 201 || json.Unmarshal(data, &o) != nil {
		t.Fatalf("create with the operate token: %d %s", resp.StatusCode, data)
	}
	// A read token follows the session over its WebSocket, and may not talk.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/api/sessions/"+o.ID+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wsSend(t, ctx, c, map[string]string{"type": "auth", "token": readToken})
	wsSend(t, ctx, c, map[string]string{"type": "user_message", "content": "hi"})
	for {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		if m["type"] == "message_accepted" {
			t.Fatalf("a read token sent a message: %s", data)
		}
		if m["type"] == "error" && m["code"] == "forbidden" {
			break
		}
	}
	if resp, data := s.req(operateToken, "DELETE", "/api/sessions/"+o.ID, "", nil); resp.StatusCode != 200 {
		t.Fatalf("close with the operate token: %d %s", resp.StatusCode, data)
	}
	c.Close(websocket.StatusNormalClosure, "")
	wsLine := regexp.MustCompile(`"GET /api/sessions/\{id\}/ws" 101 \S+ scope=read\n`)
	poll.Eventually(t, 10*time.Second, func() bool { return wsLine.MatchString(s.accessLog()) },
		"no access-log line for the read token's WebSocket:\n%s", s.accessLog())
	log := s.accessLog()
	for _, tok := range []string{e2eToken, readToken, operateToken} {
		if strings.Contains(log+s.stderr.String(), tok) {
			t.Errorf("a token is in the logs")
		}
	}
	for _, want := range []string{`POST "POST /api/sessions" 201`, "scope=operate", `GET "GET /api/history/sessions" 403`, "scope=read", `"GET /api/sessions/{id}/ws" 101`} {
		if !strings.Contains(log, want) {
			t.Errorf("access log lacks %q:\n%s", want, log)
		}
	}
}

// Finding 8: one server-wide cap on agents at work, sessions and runs
// together.
func TestE2EJobCap(t *testing.T) {
	repo := claudetest.GitRepo(t)
	block := make(chan struct{})
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response {
		<-block
		return fakeapi.Text("ok")
	})
	defer close(block)
	s := startServerArgs(t, claudetest.NewEnv(t, api.URL), repo, "--max-jobs", "3")
	var o session
	s.must(201, "POST", "/api/sessions", jsonString(map[string]string{"repo": repo}), &o)
	jobs := "version: 1\nconcurrency: 4\njobs:\n" + strings.Repeat("  - {name: J, prompt: hi}\n", 1)
	jobs = strings.Replace(jobs, "J", "a", 1)
	jobs += "  - {name: b, prompt: hi}\n  - {name: c, prompt: hi}\n  - {name: d, prompt: hi}\n"
	var run struct{ ID string }
	s.must(201, "POST", "/api/runs", jsonString(map[string]string{"jobs_yaml": jobs}), &run)
	if resp, data := s.req(e2eToken, "POST", "/api/runs", jsonString(map[string]string{"jobs_yaml": jobs}), nil); resp.StatusCode != 429 {
		t.Errorf("a run beyond --max-jobs: %d %s", resp.StatusCode, data)
	}
	if resp, data := s.req(e2eToken, "POST", "/api/sessions", jsonString(map[string]string{"repo": repo}), nil); resp.StatusCode != 429 {
		t.Errorf("a session beyond --max-jobs: %d %s", resp.StatusCode, data)
	}
	s.must(200, "DELETE", "/api/runs/"+run.ID, nil, nil)
}

// Ask 4: Host header, Cache-Control, WebSocket auth before the id, the
// connection cap.
func TestE2ETransport(t *testing.T) {
	repo := claudetest.GitRepo(t)
	s := startServerArgs(t, claudetest.NewEnv(t, idleAPI(t).URL), repo)
	_, port, _ := strings.Cut(strings.TrimPrefix(s.url, "http://"), ":")
	for host, want := range map[string]int{"evil.example:" + port: 421, "evil.example": 421, "localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200} {
		if resp, _ := s.req(e2eToken, "GET", "/api/sessions", "", map[string]string{"Host": host}); resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
	if resp, _ := s.req("", "GET", "/healthz", "", map[string]string{"Host": "10.0.0.1:" + port}); resp.StatusCode != 200 {
		t.Errorf("/healthz by address: %d (load balancers probe it so)", resp.StatusCode)
	}
	poll.Eventually(t, 10*time.Second, func() bool { return strings.Contains(s.accessLog(), `GET "GET /api/sessions" 421`) },
		"the refused Host is not in the access log:\n%s", s.accessLog())
	for _, p := range []string{"/api/sessions", "/api/health", "/api/nothing", "/healthz"} {
		if resp, _ := s.req(e2eToken, "GET", p, "", nil); resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", p, resp.Header.Get("Cache-Control"))
		}
	}
	// An upgrade without a token: the same answer whether or not the id
	// exists; a half handshake is a 401.
	var run struct{ ID string }
	s.must(201, "POST", "/api/runs", jsonString(map[string]string{"jobs_yaml": "version: 1\njobs: [{name: a, prompt: hi}]"}), &run)
	for _, id := range []string{run.ID, "20260101-000000-ffff"} {
		resp, _ := s.req("", "GET", "/api/runs/"+id+"/ws", "", map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"})
		if resp.StatusCode != 401 {
			t.Errorf("half handshake to run %s: %d, want 401", id, resp.StatusCode)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.url, "http")+"/api/runs/"+id+"/ws", nil)
		if err != nil {
			t.Fatalf("upgrade to run %s: %v", id, err)
		}
		wsSend(t, ctx, c, map[string]string{"type": "auth", "token": "wrong-token-0123456789"})
		_, _, err = c.Read(ctx)
		if websocket.CloseStatus(err) != 4001 {
			t.Errorf("wrong auth for run %s: %v, want 4001", id, err)
		}
		cancel()
		c.CloseNow()
	}
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

func firstPanic(s string) string {
	for _, k := range []string{"panic", "fatal error"} {
		if i := strings.Index(s, k); i >= 0 {
			return s[i:min(len(s), i+2500)]
		}
	}
	return tail(s, 3000)
}

// A client's sandbox read and write paths never open git's or pneuma's own
// files: a path that is, holds or is inside a repository's .git, a .pneuma
// or the server's state dir is a 400 naming the field and the path, even
// with the operator's sandbox_read and sandbox_write allowed (a writable
// .git/config names a filter the server's own `git add -A` runs on the
// host). Under --client-sandbox, read and write paths need the operator's
// allow at all, as network hosts do.
func TestE2ESandboxPaths(t *testing.T) {
	requireBwrap(t)
	repo := claudetest.GitRepo(t)
	root := filepath.Dir(repo) // holds the repository and the server's state dir
	for _, d := range []string{filepath.Join(repo, ".pneuma", "worktrees"), filepath.Join(repo, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := claudetest.NewEnv(t, idleAPI(t).URL)
	s := startServerArgs(t, env, root, "--client-sandbox", "--client-allow", "sandbox_read", "--client-allow", "sandbox_write")
	var state string
	for i, a := range s.args {
		if a == "--state-dir" {
			state = s.args[i+1]
		}
	}
	if !strings.HasPrefix(state, root+string(filepath.Separator)) {
		t.Fatalf("the state dir %s is not under the root %s: the test cannot fail", state, root)
	}
	ask := func(key string, paths ...string) string {
		return jsonString(map[string]any{"repo": repo, "sandbox": map[string]any{key: paths}})
	}
	gd := filepath.Join(repo, ".git")
	for _, tc := range []struct{ body, field, path string }{
		{ask("write", repo), "sandbox.write[0]", repo},
		{ask("write", "."), "sandbox.write[0]", "."},
		{ask("write", filepath.Join(repo, "sub"), gd), "sandbox.write[1]", gd},
		{ask("write", filepath.Join(gd, "hooks")), "sandbox.write[0]", filepath.Join(gd, "hooks")},
		{ask("write", filepath.Join(repo, "sub", "..", ".git", "config")), "sandbox.write[0]", "config"},
		{ask("write", filepath.Join(repo, ".pneuma")), "sandbox.write[0]", ".pneuma"},
		{ask("read", filepath.Join(repo, ".pneuma", "worktrees")), "sandbox.read[0]", ".pneuma"},
		{ask("write", state), "sandbox.write[0]", state},
		{ask("read", state), "sandbox.read[0]", state},
		{ask("read", root), "sandbox.read[0]", root},
		{jsonString(map[string]string{"jobs_yaml": fmt.Sprintf("version: 1\njobs:\n  - name: a\n    prompt: hi\n    repo: %s\n    sandbox: {write: [%s]}\n", repo, gd)}), "jobs[0].sandbox.write[0]", gd},
	} {
		route := "/api/sessions"
		if strings.Contains(tc.body, "jobs_yaml") {
			route = "/api/runs"
		}
		resp, data := s.req(operateToken, "POST", route, tc.body, nil)
		var ae struct {
			Problems []struct{ Field, Message string }
		}
		_ = json.Unmarshal(data, &ae)
		if resp.StatusCode != 400 || len(ae.Problems) != 1 || ae.Problems[0].Field != tc.field || !strings.Contains(ae.Problems[0].Message, tc.path) {
			t.Errorf("%s %s: %d %s, want 400 naming %s and %s", route, tc.body, resp.StatusCode, data, tc.field, tc.path)
		}
	}
	// A plain directory of the checkout is fine.
	var o session
	s.must(201, "POST", "/api/sessions", ask("write", filepath.Join(repo, "sub")), &o)
	s.must(200, "DELETE", "/api/sessions/"+o.ID, nil, nil)

	// Without the operator's allow, under --client-sandbox, none at all.
	closed := startServerArgs(t, env, root, "--client-sandbox")
	for _, key := range []string{"read", "write"} {
		resp, data := closed.req(operateToken, "POST", "/api/sessions", ask(key, filepath.Join(repo, "sub")), nil)
		if resp.StatusCode != 403 || !strings.Contains(string(data), "sandbox."+key) || !strings.Contains(string(data), "sandbox_"+key) {
			t.Errorf("sandbox.%s without the operator's allow: %d %s, want 403 naming sandbox_%s", key, resp.StatusCode, data, key)
		}
	}
}

// requireBwrap fails the test in CI when bubblewrap cannot run here (a
// forced sandbox needs it), and skips it elsewhere.
func requireBwrap(t *testing.T) { t.Helper(); boxtest.Require(t, "the test") }

// A client resumes only a CLI session of one of the server's own sessions:
// the CLI would resume any conversation of the operator's it finds (here
// one held by another server of the same user, in the same repository),
// so another id is a 400 naming resume, while the server's own session,
// closed, still resumes.
func TestE2EResumeOwnSessionsOnly(t *testing.T) {
	repo := claudetest.GitRepo(t)
	api := fakeapi.New(t, func(r *fakeapi.Request) fakeapi.Response { return fakeapi.Text("ok") })
	env := claudetest.NewEnv(t, api.URL)
	other := startServerArgs(t, env, repo) // the operator's other server: same HOME, same CLI projects
	foreign := other.create(jsonString(map[string]any{"repo": repo, "name": "operator's"}))
	other.must(200, "POST", "/api/sessions/"+foreign.ID+"/messages", `{"content":"OPERATOR-SECRET private conversation","wait":true}`, nil)
	foreign = other.get(foreign.ID)
	if foreign.CLISessionID == "" {
		t.Fatalf("the other server's session has no CLI session id: %+v", foreign)
	}

	s := startServerArgs(t, env, repo)
	own := s.create(jsonString(map[string]any{"repo": repo, "name": "own"}))
	s.must(200, "POST", "/api/sessions/"+own.ID+"/messages", `{"content":"first","wait":true}`, nil)
	own = s.get(own.ID)
	s.must(200, "DELETE", "/api/sessions/"+own.ID, nil, nil)
	for _, id := range []string{foreign.CLISessionID, "00000000-0000-4000-8000-000000000000", "../../etc/passwd"} {
		for _, fork := range []bool{false, true} {
			resp, data := s.req(operateToken, "POST", "/api/sessions", jsonString(map[string]any{"repo": repo, "resume": id, "fork_session": fork}), nil)
			var ae struct {
				Problems []struct{ Field string }
			}
			_ = json.Unmarshal(data, &ae)
			if resp.StatusCode != 400 || len(ae.Problems) != 1 || ae.Problems[0].Field != "resume" {
				t.Errorf("resume %q (fork %v): %d %s, want 400 naming resume", id, fork, resp.StatusCode, data)
			}
		}
	}
	again := s.create(jsonString(map[string]any{"repo": repo, "resume": own.CLISessionID, "fork_session": true}))
	s.must(200, "DELETE", "/api/sessions/"+again.ID, nil, nil)
}
