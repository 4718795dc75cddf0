package cmd

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestJSONErrorEvent: under --json (or --format json) an error that ends a
// command is one JSON event on stdout and nothing else is; without it,
// stdout stays empty and the error is plain text on stderr only.
func TestJSONErrorEvent(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantJSON bool
		wantMsg  string
		wantCode int
	}{
		{"run --json, missing jobs file", []string{"run", "--json", "/nonexistent/jobs.yaml"}, true, "read jobs file: open /nonexistent/jobs.yaml", ExitUsage},
		{"run --json, unknown flag", []string{"run", "--json", "--no-such-flag", "jobs.yaml"}, true, "unknown flag: --no-such-flag", ExitUsage},
		{"history list --json, bad --since", []string{"history", "list", "--json", "--since", "someday"}, true, `--since: cannot read "someday"`, ExitUsage},
		{"report show --format json, missing report", []string{"report", "show", "--format", "json", "/nonexistent/report.json"}, true, "read report: open /nonexistent/report.json", ExitUsage},
		{"run without --json", []string{"run", "/nonexistent/jobs.yaml"}, false, "read jobs file", ExitUsage},
		{"report show as a table", []string{"report", "show", "/nonexistent/report.json"}, false, "read report", ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			code, stdout, stderr := execReport(t, map[string]string{"HOME": t.TempDir()}, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stderr, "pneuma: "+tt.wantMsg) {
				t.Errorf("stderr = %q, want the plain error %q", stderr, tt.wantMsg)
			}
			if !tt.wantJSON {
				if stdout != "" {
					t.Errorf("stdout = %q, want nothing", stdout)
				}
				return
			}
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			if len(lines) != 1 || !strings.HasSuffix(stdout, "\n") {
				t.Fatalf("stdout = %q, want exactly one JSON line", stdout)
			}
			var ev struct {
				Type     string    `json:"type"`
				Time     time.Time `json:"time"`
				Message  string    `json:"message"`
				ExitCode *int      `json:"exit_code"`
			}
			dec := json.NewDecoder(strings.NewReader(lines[0]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ev); err != nil {
				t.Fatalf("stdout %q: %v", lines[0], err)
			}
			if ev.Type != "error" || !strings.HasPrefix(ev.Message, tt.wantMsg) || ev.ExitCode == nil || *ev.ExitCode != code {
				t.Errorf("event = %+v, want type error, message %q…, exit_code %d", ev, tt.wantMsg, code)
			}
			if ev.Time.Before(before.Add(-time.Second)) || ev.Time.After(time.Now().Add(time.Second)) {
				t.Errorf("event time %v, want about now", ev.Time)
			}
			if strings.Contains(ev.Message, "Usage:") {
				t.Errorf("message carries the usage text: %q", ev.Message)
			}
		})
	}
}

func TestJSONErrorEventMarked(t *testing.T) {
	root := NewRootCmd(&IO{})
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if jsonOutput(run) {
		t.Fatal("run prints JSON before it is asked to")
	}
	markJSON(run)
	if !jsonOutput(run) {
		t.Error("markJSON(run): jsonOutput = false, want true (PNEUMA_JSON or a config file set json)")
	}
	var b strings.Builder
	if err := writeErrorEvent(&b, &UsageError{Err: errors.New("bad flag"), Usage: "Usage: ..."}, ExitUsage, time.Unix(0, 0).UTC()); err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"error","time":"1970-01-01T00:00:00Z","message":"bad flag","exit_code":2}` + "\n"; b.String() != want {
		t.Errorf("event = %s, want %s", b.String(), want)
	}
}
