package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pneuma-cli/pneuma/runner"
)

// TestRecorderContinuesAndSurvivesDamage: a resumed run continues the seqs
// of its events.jsonl; a damaged log is kept aside and a new one begins
// (the run is never refused for its log).
func TestRecorderContinuesAndSurvivesDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "events.jsonl")
	var warn bytes.Buffer
	for i := range 2 {
		rec, err := openRecorder(path, &warn)
		if err != nil {
			t.Fatal(err)
		}
		rec.Event(runner.Event{Type: runner.EventRunStarted, Jobs: 1})
		rec.Close(&warn)
		data, _ := os.ReadFile(path)
		if want := `{"seq":` + string(rune('1'+i)); !strings.Contains(string(data), want) {
			t.Errorf("open %d: log %q lacks %s", i+1, data, want)
		}
	}
	if err := os.WriteFile(path, []byte("{\"seq\":1,\"type\":\"x\"}\nnot an event\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecorder(path, &warn)
	if err != nil {
		t.Fatalf("a damaged log refused the run: %v", err)
	}
	rec.Event(runner.Event{Type: runner.EventRunStarted, Jobs: 1})
	rec.Close(&warn)
	if _, err := os.Stat(path + ".damaged"); err != nil || !strings.Contains(warn.String(), "damaged") {
		t.Errorf("the damaged log is not kept aside with a warning: %v, %q", err, warn.String())
	}
}
