package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/report"
	"github.com/pneuma-cli/pneuma/runner"
)

// TestStateDirLock is finding 6 of issue 26: a second server on a state
// directory fails at once naming the first one's pid; the lock goes with
// the first server.
func TestStateDirLock(t *testing.T) {
	b := newBed(t, nil)
	_, err := New(b.cfg)
	var le *StateLockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second server: %v, want a StateLockedError naming pid %d", err, os.Getpid())
	}
	b.stop()
	b2 := startBed(t, b.cfg)
	b2.stop()
}

// TestDamagedSessionsSkipped is finding 6: a session whose log was
// corrupted (a duplicate seq, as two servers wrote it) or whose
// session.json is garbage is listed damaged with why, its events up to the
// damage readable and its files untouched; the others restore and work,
// and damaged sessions take no slot, message or interrupt.
func TestDamagedSessionsSkipped(t *testing.T) {
	b := newBed(t, func(c *Config) { c.MaxSessions = 3 })
	var logs []string
	b.cfg.Logf = func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }
	dupID, badJSON, good := b.createSession(), b.createSession(), b.createSession()
	for _, id := range []string{dupID, badJSON, good} {
		b.do("POST", "/api/sessions/"+id+"/messages", `{"content":"hi","wait":true}`, nil)
	}
	b.stop()
	dirs := runner.StateDir(b.cfg.StateDir)
	events := dirs.Session(dupID).Events()
	data, _ := os.ReadFile(events)
	lines := strings.SplitAfter(string(data), "\n")
	dup := strings.Join(lines[:3], "") + lines[2] + strings.Join(lines[3:], "") // event 3 twice
	os.WriteFile(events, []byte(dup), 0o644)
	os.WriteFile(dirs.Session(badJSON).SessionFile(), []byte("{not json"), 0o644)

	b2 := startBed(t, b.cfg)
	var list []sessionObject
	b2.do("GET", "/api/sessions", "", &list)
	status := map[string]sessionObject{}
	for _, o := range list {
		status[o.ID] = o
	}
	if o := status[dupID]; o.Status != StatusDamaged || !strings.Contains(o.Damage, "events.jsonl:4") || o.LastSeq != 3 || o.Name != "t" {
		t.Errorf("session with a duplicate seq: %+v", o)
	}
	if o := status[badJSON]; o.Status != StatusDamaged || !strings.Contains(o.Damage, "session.json") || o.LastSeq != 6 {
		t.Errorf("session with a bad session.json: %+v", o)
	}
	if o := status[good]; o.Status != StatusIdle {
		t.Errorf("the good session: %+v", o)
	}
	if len(logs) != 2 || !strings.Contains(strings.Join(logs, "\n"), "damaged") {
		t.Errorf("warnings: %q", logs)
	}
	var p pollPage
	b2.do("GET", "/api/sessions/"+dupID+"/events?after=0", "", &p)
	if len(p.Events) != 3 || p.LastSeq != 3 {
		t.Errorf("events of the damaged session: %+v", p)
	}
	var e apiError
	if resp := b2.do("POST", "/api/sessions/"+dupID+"/messages", `{"content":"again"}`, &e); resp.StatusCode != http.StatusConflict || !strings.Contains(e.Error, "damaged") {
		t.Errorf("message to a damaged session: %d %+v", resp.StatusCode, e)
	}
	for _, path := range []string{"/interrupt", ""} {
		method := map[string]string{"/interrupt": "POST", "": "DELETE"}[path]
		if resp := b2.do(method, "/api/sessions/"+dupID+path, "", nil); resp.StatusCode != http.StatusConflict {
			t.Errorf("%s %s on a damaged session: %d", method, path, resp.StatusCode)
		}
	}
	if resp := b2.do("POST", "/api/sessions/"+good+"/messages", `{"content":"again","wait":true}`, nil); resp.StatusCode != 200 {
		t.Errorf("message to the good session: %d", resp.StatusCode)
	}
	// Two damaged sessions take no slot: two more open.
	b2.createSession()
	b2.createSession()
	b2.stop()
	if got, _ := os.ReadFile(events); string(got) != dup {
		t.Errorf("the damaged log changed")
	}
	if got, _ := os.ReadFile(dirs.Session(badJSON).SessionFile()); string(got) != "{not json" {
		t.Errorf("the damaged session.json changed: %s", got)
	}
}

// Interrupting a closed session is a 409, like a message to it; an idle
// one answers 202.
func TestInterruptClosed(t *testing.T) {
	b := newBed(t, nil)
	id := b.createSession()
	if resp := b.do("POST", "/api/sessions/"+id+"/interrupt", "", nil); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("interrupt an open session: %d", resp.StatusCode)
	}
	b.do("DELETE", "/api/sessions/"+id, "", nil)
	var e apiError
	if resp := b.do("POST", "/api/sessions/"+id+"/interrupt", "", &e); resp.StatusCode != http.StatusConflict || !strings.Contains(e.Error, "closed") {
		t.Fatalf("interrupt a closed session: %d %+v", resp.StatusCode, e)
	}
}

// After a restart a finished run shows its real jobs_total (from its
// report), and a run whose log is damaged is listed damaged instead of
// keeping the server from starting.
func TestRestoredRuns(t *testing.T) {
	b := newBed(t, nil)
	b.stop()
	write := func(id, events string, rep *report.Report) {
		path := runEventsPath(&b.cfg, id)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(events), 0o644)
		if rep != nil {
			data, _ := json.Marshal(rep)
			os.WriteFile(runLayout(&b.cfg).Run(id).Report(), data, 0o644)
		}
	}
	rep := &report.Report{Schema: report.Schema, Status: "success", Totals: report.Totals{Jobs: 3}, Jobs: []report.Job{{Name: "a"}, {Name: "b"}, {Name: "c"}}}
	write("r1", `{"seq":1,"type":"run_started"}`+"\n", rep)
	write("r2", `{"seq":1,"type":"run_started"}`+"\n"+`{"seq":1,"type":"run_started"}`+"\n", nil)
	b2 := startBed(t, b.cfg)
	var o runObject
	if b2.do("GET", "/api/runs/r1", "", &o); o.JobsTotal != 3 || o.Status != "success" {
		t.Errorf("finished run after a restart: %+v", o)
	}
	if b2.do("GET", "/api/runs/r2", "", &o); o.Status != "damaged" || o.LastSeq != 1 {
		t.Errorf("damaged run: %+v", o)
	}
}

// Job routes take a job's name as well as its slug: the console links to
// jobs/fix%20the%20bug, whose files are in jobs/fix-the-bug.
func TestJobRoutesTakeTheName(t *testing.T) {
	b := newBed(t, nil)
	b.stop()
	run := runLayout(&b.cfg).Run("r1")
	os.MkdirAll(string(run.Job("fix-the-bug")), 0o755)
	os.WriteFile(run.Job("fix-the-bug").Stream(), []byte(`{"type":"system"}`+"\n"), 0o644)
	os.WriteFile(runEventsPath(&b.cfg, "r1"), []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644)
	plan := `{"plan":{"jobs":[{"name":"fix the bug","slug":"fix-the-bug"},{"name":"other","slug":"../../x"}]}}`
	os.WriteFile(run.Journal(), []byte(plan), 0o644)
	b2 := startBed(t, b.cfg)
	for path, want := range map[string]int{
		"fix%20the%20bug": 200, "fix-the-bug": 200, "fix%20the%20bugs": 404, "other": 404, "..%2F..%2Fx": 404,
	} {
		resp := b2.do("GET", "/api/runs/r1/jobs/"+path+"/stream", "", nil)
		if resp.StatusCode != want {
			t.Errorf("job %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// GET /api/runs/{id}/jobs/{job} answers one finished job's report entry by
// name or slug: before the report, the latest of a job run again in
// results.jsonl; a job without an entry is a 404.
func TestRunJobEntry(t *testing.T) {
	b := newBed(t, nil)
	b.stop()
	run := runLayout(&b.cfg).Run("r1")
	os.MkdirAll(string(run), 0o755)
	os.WriteFile(runEventsPath(&b.cfg, "r1"), []byte(`{"seq":1,"type":"run_started"}`+"\n"), 0o644)
	os.WriteFile(run.Journal(), []byte(`{"plan":{"jobs":[{"name":"fix the bug","slug":"fix-the-bug"},{"name":"b","slug":"b"},{"name":"c","slug":"c"}]}}`), 0o644)
	os.WriteFile(run.Results(), []byte(`{"name":"fix the bug","status":"failed","error":"first"}`+"\n"+
		`{"name":"b","status":"succeeded"}`+"\n"+`{"name":"fix the bug","status":"succeeded","error":"again"}`+"\n"), 0o644)
	b2 := startBed(t, b.cfg)
	for path, want := range map[string]string{"fix%20the%20bug": "again", "fix-the-bug": "again", "b": "", "c": "404", "nope": "404"} {
		var j report.Job
		resp := b2.do("GET", "/api/runs/r1/jobs/"+path, "", &j)
		switch {
		case want == "404" && resp.StatusCode != 404:
			t.Errorf("job %s: %d, want 404", path, resp.StatusCode)
		case want != "404" && (resp.StatusCode != 200 || j.Error != want):
			t.Errorf("job %s: %d %+v, want the entry with error %q", path, resp.StatusCode, j, want)
		}
	}

	// Once the run has its report, the entry is the report's: found by its
	// name wherever "name" stands in the object, the members before it
	// skipped (nested objects and arrays too), and answered as written.
	b2.stop()
	os.WriteFile(run.Report(), []byte(`{"schema":"`+report.Schema+`","status":"failed","totals":{"jobs":3},"jobs":[`+
		`{"name":"fix the bug","status":"failed","error":"in the report"},`+
		`{"status":"succeeded","usage":{"input_tokens":3},"denials":[{"tool_name":"Bash"}],"name":"b","error":"named last","future":{"x":[1,{"name":"c"}]}},`+
		`{"status":"skipped"}]}`), 0o644)
	b3 := startBed(t, b.cfg)
	for path, want := range map[string]string{"fix-the-bug": "in the report", "b": "named last", "c": "404"} {
		var j map[string]any
		resp := b3.do("GET", "/api/runs/r1/jobs/"+path, "", &j)
		switch {
		case want == "404" && resp.StatusCode != 404:
			t.Errorf("report: job %s: %d %v, want 404", path, resp.StatusCode, j)
		case want != "404" && (resp.StatusCode != 200 || j["error"] != want):
			t.Errorf("report: job %s: %d %v, want the entry with error %q", path, resp.StatusCode, j, want)
		}
	}
	var j map[string]any
	if b3.do("GET", "/api/runs/r1/jobs/b", "", &j); j["future"] == nil {
		t.Errorf("job b: %v, want its entry as written, with the member this pneuma does not know", j)
	}
}
