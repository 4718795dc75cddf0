package histgen

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pneuma-cli/pneuma/history"
)

// The generated tree must read back as Claude Code history: sessions,
// subagents, forks, no malformed lines (torn last lines are expected).
func TestGenerateReadsBack(t *testing.T) {
	dir := t.TempDir()
	st, err := Generate(context.Background(), dir, Options{Bytes: 12 << 20, Projects: 3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions < 10 || st.Bytes < 12<<20 {
		t.Fatalf("stats %+v", st)
	}
	c, err := history.Scan(context.Background(), dir, history.ScanOptions{Summary: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Sessions()); got != st.Sessions {
		t.Errorf("read %d sessions, generated %d", got, st.Sessions)
	}
	if c.Stats.Malformed != 0 || c.Stats.Oversized != 0 {
		t.Errorf("read stats %+v", c.Stats)
	}
	if tot := c.Total(); tot.APICalls == 0 || tot.UnpricedCalls != 0 {
		t.Errorf("totals %+v", tot)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*", "subagents", "*.jsonl"))
	if len(files) != st.Subagents {
		t.Errorf("%d subagent files, %d generated", len(files), st.Subagents)
	}
	p, err := GenerateSession(t.TempDir(), 3<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() < 3<<20 {
		t.Errorf("big session %s: %v", p, err)
	}
}
