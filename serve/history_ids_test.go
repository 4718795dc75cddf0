package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHistoryIDsAreNotPaths is finding 3 of issue 26: over HTTP a history
// id is a session id, nothing else. Paths (absolute, relative, escaped,
// with ..) and names ending .jsonl answer 404 (or 400) with one body
// shape that says nothing of the file system, and no byte of the file.
func TestHistoryIDsAreNotPaths(t *testing.T) {
	home := t.TempDir()
	const sid = "11111111-2222-4333-8444-555555555555"
	transcript := filepath.Join(home, ".claude", "projects", "-p", sid+".jsonl")
	os.MkdirAll(filepath.Dir(transcript), 0o755)
	line := `{"type":"user","cwd":"/p","sessionId":"` + sid + `","message":{"role":"user","content":"the real session"}}` + "\n"
	os.WriteFile(transcript, []byte(line), 0o600)
	// Files a path would reach: absolute, and relative to the server's
	// working directory.
	outside := t.TempDir()
	secret := `{"type":"user","message":{"role":"user","content":"SECRET-OUTSIDE"}}` + "\n"
	os.WriteFile(filepath.Join(outside, "t.jsonl"), []byte(secret), 0o600)
	wd, _ := os.Getwd()
	os.WriteFile(filepath.Join(wd, "rel-secret.jsonl"), []byte(secret), 0o600)
	t.Cleanup(func() { os.Remove(filepath.Join(wd, "rel-secret.jsonl")) })

	// A transcript the history cannot read: a named pipe.
	const fifo = "33333333-2222-4333-8444-555555555555"
	if err := syscall.Mkfifo(filepath.Join(filepath.Dir(transcript), fifo+".jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBed(t, func(c *Config) {
		c.Getenv = func(k string) string { return map[string]string{"HOME": home}[k] }
	})
	get := func(id string) (int, string) {
		req, _ := http.NewRequest("GET", b.ts.URL+"/api/history/sessions/"+id+"?format=text", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := b.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	if code, body := get(sid); code != 200 || !strings.Contains(body, "the real session") {
		t.Fatalf("a session id: %d %s", code, body)
	}
	if code, body := get(sid[:8]); code != 200 || !strings.Contains(body, "the real session") {
		t.Fatalf("an id prefix: %d %s", code, body)
	}
	esc := func(p string) string { return strings.ReplaceAll(p, "/", "%2F") }
	for _, id := range []string{
		"%2Fetc%2Fpasswd",
		esc(filepath.Join(outside, "t.jsonl")),
		esc(filepath.Join(outside, "..", filepath.Base(outside), "t.jsonl")),
		"..%2F..",
		"..",
		"%2Froot%2F.ssh%2Fid_rsa",
		"rel-secret.jsonl",
		"rel-secret",
		esc("-p/" + sid + ".jsonl"),
		esc(transcript),
		sid + ".jsonl",
		"%5C..%5Cwin",
		"22222222-0000-4000-8000-000000000000",
		fifo,
	} {
		code, body := get(id)
		if code != http.StatusNotFound && code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 404 or 400", id, code, body)
			continue
		}
		var e map[string]any
		if err := json.Unmarshal([]byte(body), &e); err != nil || len(e) != 1 || e["error"] == nil {
			t.Errorf("%s: body %q is not {\"error\":...}", id, body)
		}
		for _, leak := range []string{"SECRET", "root:", "lstat", "no such file", "stat ", "permission", "pipe", "regular", home, outside} {
			if strings.Contains(body, leak) {
				t.Errorf("%s: the answer holds %q: %s", id, leak, body)
			}
		}
	}
}
