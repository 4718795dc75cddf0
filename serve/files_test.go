package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pneuma-cli/pneuma/runner"
)

// jobBed is a server restarted on a state directory holding run r1 with
// job "j", whose files write fills in first.
func jobBed(t *testing.T, write func(job runner.JobDir)) *bed {
	t.Helper()
	b := newBed(t, nil)
	b.stop()
	run := runLayout(&b.cfg).Run("r1")
	job := run.Job("j")
	if err := os.MkdirAll(string(job), 0o755); err != nil {
		t.Fatal(err)
	}
	write(job)
	if err := os.WriteFile(runEventsPath(&b.cfg, "r1"), []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return startBed(t, b.cfg)
}

// get is a GET with the token whose whole body is read.
func (b *bed) get(path string) (*http.Response, []byte) {
	b.t.Helper()
	req, err := http.NewRequest("GET", b.ts.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := b.ts.Client().Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, body
}

// A tail of a stream larger than MaxStreamTail answers the whole lines
// that fit and says it was cut; a last line larger than that is a 413.
func TestStreamTailIsCapped(t *testing.T) {
	line := func(i int) string {
		return fmt.Sprintf(`{"type":"x","i":%d,"pad":%q}`, i, strings.Repeat("p", 1000)) + "\n"
	}
	const lines = 10 * 1024 // about 10 MiB
	b := jobBed(t, func(job runner.JobDir) {
		var sb strings.Builder
		for i := range lines {
			sb.WriteString(line(i))
		}
		if err := os.WriteFile(job.Stream(), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	resp, body := b.get("/api/runs/r1/jobs/j/stream?tail=100000")
	if resp.StatusCode != 200 || resp.Header.Get(TailCutHeader) != "true" {
		t.Fatalf("tail=100000 of 10 MiB: %d, %s %q", resp.StatusCode, TailCutHeader, resp.Header.Get(TailCutHeader))
	}
	if len(body) > MaxStreamTail {
		t.Errorf("answered %d bytes, above the %d allowed", len(body), MaxStreamTail)
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	var first, last map[string]any
	count := 0
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d of the cut tail is not whole: %v", count, err)
		}
		if first == nil {
			first = m
		}
		last = m
		count++
	}
	if last["i"] != float64(lines-1) || first["i"] != float64(lines-count) {
		t.Errorf("cut tail holds lines %v..%v (%d), want the last %d", first["i"], last["i"], count, count)
	}
	// A tail that fits is not cut.
	resp, body = b.get("/api/runs/r1/jobs/j/stream?tail=2")
	if resp.StatusCode != 200 || resp.Header.Get(TailCutHeader) != "" || string(body) != line(lines-2)+line(lines-1) {
		t.Errorf("tail=2: %d, cut %q, %d bytes", resp.StatusCode, resp.Header.Get(TailCutHeader), len(body))
	}

	huge := jobBed(t, func(job runner.JobDir) {
		data := `{"type":"a"}` + "\n" + `{"type":"b","pad":"` + strings.Repeat("p", MaxStreamTail) + `"}` + "\n"
		if err := os.WriteFile(job.Stream(), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if resp, body := huge.get("/api/runs/r1/jobs/j/stream?tail=1"); resp.StatusCode != http.StatusRequestEntityTooLarge || len(body) > 1024 {
		t.Errorf("tail=1 of a line over the cap: %d, %d bytes, want a short 413", resp.StatusCode, len(body))
	}
}

func TestTailLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	for _, tc := range []struct {
		data  string
		n     int
		limit int64
		want  string
		cut   bool
	}{
		{"", 3, 100, "", false},
		{"a\nb\nc\n", 2, 100, "b\nc\n", false},
		{"a\nb\nc", 2, 100, "b\nc", false},
		{"a\nb\nc\n", 5, 100, "a\nb\nc\n", false},
		{"aaa\nbb\nc\n", 3, 5, "bb\nc\n", true},
		{"aaa\nbb\nc\n", 3, 6, "bb\nc\n", true},
		{"aaa\nbb\nc\n", 3, 4, "c\n", true},
		{"aaa\nbbbbbb\n", 1, 4, "", true},
		{"aaa\nbb\nc\n", 2, 5, "bb\nc\n", false},
	} {
		if err := os.WriteFile(path, []byte(tc.data), 0o644); err != nil {
			t.Fatal(err)
		}
		got, cut, err := tailLines(path, tc.n, tc.limit)
		if err != nil || string(got) != tc.want || cut != tc.cut {
			t.Errorf("tail %d of %q in %d bytes: %q cut %v (%v), want %q cut %v", tc.n, tc.data, tc.limit, got, cut, err, tc.want, tc.cut)
		}
	}
}

// A job's diff is answered as it is on disk when it is a regular file of
// at most MaxDiff bytes; a larger one is a 413 and a named pipe a 500,
// never a hang.
func TestJobDiffIsCapped(t *testing.T) {
	const patch = "diff --git a/x b/x\n+y\n"
	checkJobFile(t, "/diff", runner.JobDir.Patch, []jobFileCase{
		{"regular", func(p string) error { return os.WriteFile(p, []byte(patch), 0o644) }, 200, patch},
		{"none", func(string) error { return nil }, 200, ""},
		{"over the cap", func(p string) error {
			f, err := os.Create(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(MaxDiff + 1) // sparse: no 32 MiB written
		}, http.StatusRequestEntityTooLarge, ""},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, http.StatusInternalServerError, ""},
	})
}

// A job's stream tail reads only a regular file: a named pipe in its place
// is a 500 at once, never a request that hangs, and no answer names the
// state directory.
func TestJobStreamTailRegularOnly(t *testing.T) {
	const line = `{"type":"system","subtype":"init"}` + "\n"
	checkJobFile(t, "/stream?tail=5", runner.JobDir.Stream, []jobFileCase{
		{"regular", func(p string) error { return os.WriteFile(p, []byte(line), 0o644) }, 200, line},
		{"none", func(string) error { return nil }, http.StatusNotFound, ""},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, http.StatusInternalServerError, ""},
	})
}

// jobFileCase is a job's file as write leaves it, and the answer a route
// that serves it gives: the status, and the body when it is a 200.
type jobFileCase struct {
	name  string
	write func(path string) error
	code  int
	body  string
}

// checkJobFile asks route (after /api/runs/r1/jobs/j) of a server whose
// job has, at file(job), what each case writes, within 20 seconds in all
// (a request that hangs fails), and checks the answers, none of which may
// name the state directory.
func checkJobFile(t *testing.T, route string, file func(runner.JobDir) string, cases []jobFileCase) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, tc := range cases {
		b := jobBed(t, func(job runner.JobDir) {
			if err := tc.write(file(job)); err != nil {
				t.Fatal(err)
			}
		})
		req, _ := http.NewRequestWithContext(ctx, "GET", b.ts.URL+"/api/runs/r1/jobs/j"+route, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := b.ts.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.code == 200 && string(body) != tc.body) {
			t.Errorf("%s: %d %q, want %d", tc.name, resp.StatusCode, body, tc.code)
		}
		if strings.Contains(string(body), b.cfg.StateDir) {
			t.Errorf("%s: the answer names the state directory: %s", tc.name, body)
		}
	}
}
