package history

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func scanTotals(t *testing.T, cfg, cache string, summary bool) (Totals, []*SessionSummary) {
	t.Helper()
	c, err := Scan(context.Background(), cfg, ScanOptions{Summary: summary, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	return c.Total(), c.Sessions()
}

func TestIndexServesUnchangedFilesOnly(t *testing.T) {
	cfg, session, wantOut := writePartialTree(t)
	cache := t.TempDir()
	fresh, freshSessions := scanTotals(t, cfg, "", true)
	first, firstSessions := scanTotals(t, cfg, cache, true)
	if !reflect.DeepEqual(first, fresh) || len(firstSessions) != len(freshSessions) {
		t.Fatalf("indexed scan %+v differs from a plain one %+v", first, fresh)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "history", "*.index")); len(m) != 1 {
		t.Fatalf("index files: %v", m)
	}
	for _, summary := range []bool{true, false} {
		again, againSessions := scanTotals(t, cfg, cache, summary)
		if !reflect.DeepEqual(again, fresh) {
			t.Errorf("scan from the index (summary %v) = %+v, want %+v", summary, again, fresh)
		}
		if summary && (againSessions[0].FirstPrompt != freshSessions[0].FirstPrompt || !againSessions[0].Started.Equal(freshSessions[0].Started)) {
			t.Errorf("summary from the index = %+v, want %+v", againSessions[0], freshSessions[0])
		}
	}

	// Same size and time, other content: the index is trusted (proof that
	// it is used)...
	data, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(session)
	forged := bytes.Replace(data, []byte(`"output_tokens":240`), []byte(`"output_tokens":999`), 1)
	if err := os.WriteFile(session, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(session, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanTotals(t, cfg, cache, false); got.OutputTokens != fresh.OutputTokens {
		t.Errorf("unchanged size and time: output %d, want the indexed %d", got.OutputTokens, fresh.OutputTokens)
	}
	// ...and a file that grew is read again.
	grown := append(forged, []byte(partialLine("s1", "a9", "a5", "msg_9", "req_9", 5, `{"type":"text","text":"more"}`)+"\n")...)
	if err := os.WriteFile(session, grown, 0o644); err != nil {
		t.Fatal(err)
	}
	later := fi.ModTime().Add(time.Second)
	if err := os.Chtimes(session, later, later); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanTotals(t, cfg, cache, false); got.OutputTokens != fresh.OutputTokens+999-240+5 {
		t.Errorf("grown file: output %d, want %d (s1 now %d)", got.OutputTokens, fresh.OutputTokens+999-240+5, wantOut+999-240+5)
	}

	// A broken index is ignored.
	m, _ := filepath.Glob(filepath.Join(cache, "history", "*.index"))
	if err := os.WriteFile(m[0], []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := scanTotals(t, cfg, cache, true); got.APICalls != fresh.APICalls+1 {
		t.Errorf("with a broken index: %+v", got)
	}
}
