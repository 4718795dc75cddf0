package history

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// indexSample is an index of two files: offsets other than UTC, zero
// times, several models, every count set.
func indexSample() map[string]*indexEntry {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890e6, time.FixedZone("", 2*3600))
	return map[string]*indexEntry{
		"/p/a.jsonl": {Size: 123, MTime: at.UnixNano(), Summary: true, PeekStart: at, ForkLike: true, Cwd: "/home/é",
			Start: at, Last: at.Add(time.Hour).UTC(), Stats: ReadStats{Lines: 9, Malformed: 1, Oversized: 2, Torn: 1, Repaired: 3},
			FirstPrompt: "hello\nworld", Prompts: 4, Compacted: 1, Interrupted: 2, APIErrors: 3, InlineAgent: 5,
			Calls: []indexCall{
				{K0: 1, K1: 2, TS: at.UnixNano(), Model: "claude-opus-4-8", In: 1, Out: 2, CW: 3, CR: 4, E5: 5, E1: 6},
				{K0: ^uint64(0), K1: 7, Model: "claude-haiku-4-5", Side: true, Out: 1 << 40},
				{K0: 3, K1: 4, TS: -1, Model: "claude-opus-4-8"},
			}},
		"/p/b.jsonl": {Size: 0, MTime: -5},
	}
}

// sameEntries reports whether two indexes hold the same entries (times
// compared as instants with their offsets).
func sameEntries(t *testing.T, got, want map[string]*indexEntry) {
	t.Helper()
	norm := func(m map[string]*indexEntry) map[string]indexEntry {
		out := map[string]indexEntry{}
		for p, e := range m {
			c := *e
			c.PeekStart, c.Start, c.Last = time.Time{}, time.Time{}, time.Time{}
			if len(c.Calls) == 0 {
				c.Calls = nil
			}
			out[p+" "+e.PeekStart.Format(time.RFC3339Nano)+" "+e.Start.Format(time.RFC3339Nano)+" "+e.Last.Format(time.RFC3339Nano)] = c
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("index read back:\n%+v\nwant\n%+v", g, w)
	}
}

func writeSample(t *testing.T, path string, files map[string]*indexEntry) {
	t.Helper()
	w := createIndex(path)
	for _, p := range sortedKeys(files) {
		e := files[p]
		w.entry(p, e, len(e.Calls), func(i int) indexCall { return e.Calls[i] })
	}
	w.commit(path)
	if w.err != nil {
		t.Fatal(w.err)
	}
}

func TestIndexFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history", "x.index")
	want := indexSample()
	writeSample(t, path, want)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readIndex(bufio.NewReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	sameEntries(t, got, want)
	// Every cut of the file, and a byte more, is rejected.
	for _, bad := range [][]byte{data[:len(data)-1], data[:len(indexMagic)+1], append(data[:len(data):len(data)], 0)} {
		if _, err := readIndex(bufio.NewReader(bytes.NewReader(bad))); err == nil {
			t.Errorf("readIndex accepted a damaged file of %d bytes (whole: %d)", len(bad), len(data))
		}
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(path), indexTempPrefix+"*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestIndexDiscard: a scan that does not complete leaves the index it
// started from in place and no temporary file.
func TestIndexDiscard(t *testing.T) {
	cache := t.TempDir()
	ix := openIndex(cache, "/projects")
	writeSample(t, ix.path, indexSample())
	before, _ := os.ReadFile(ix.path)
	ix = openIndex(cache, "/projects")
	if len(ix.old) != 2 {
		t.Fatalf("index loaded %d entries, want 2", len(ix.old))
	}
	ix.store("/p/c.jsonl", fakeInfo{size: 1}, time.Time{}, false, false, &fileScan{})
	ix.discard()
	after, _ := os.ReadFile(ix.path)
	if !bytes.Equal(before, after) {
		t.Error("a discarded scan changed the index")
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(ix.path), indexTempPrefix+"*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

type fakeInfo struct {
	os.FileInfo
	size int64
}

func (f fakeInfo) Size() int64        { return f.size }
func (f fakeInfo) ModTime() time.Time { return time.Unix(0, 42) }

func FuzzReadIndex(f *testing.F) {
	path := filepath.Join(f.TempDir(), "x.index")
	w := createIndex(path)
	for _, p := range sortedKeys(indexSample()) {
		e := indexSample()[p]
		w.entry(p, e, len(e.Calls), func(i int) indexCall { return e.Calls[i] })
	}
	w.commit(path)
	valid, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add([]byte(indexMagic + "\x04\x00\x00"))
	f.Add([]byte(indexMagic + "\x04\x01\xff\xff\xff\xff\x0f"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := readIndex(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		// What reads back writes back the same.
		path := filepath.Join(t.TempDir(), "x.index")
		writeSample(t, path, files)
		again, _ := os.ReadFile(path)
		files2, err := readIndex(bufio.NewReader(bytes.NewReader(again)))
		if err != nil {
			t.Fatalf("rewritten index unreadable: %v", err)
		}
		sameEntries(t, files2, files)
	})
}

// TestIndexKeepsUnselectedProjects: a scan of one project rewrites the index
// with its files' entries and keeps those of the other projects.
func TestIndexKeepsUnselectedProjects(t *testing.T) {
	cache := t.TempDir()
	if _, err := Scan(context.Background(), "testdata", ScanOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	all := openIndex(cache, ProjectsDir("testdata")).old
	if len(all) < 3 {
		t.Fatalf("index of %d files", len(all))
	}
	// Forget one file of /home/me/proj so that a scan of that project
	// writes the index again.
	ix := openIndex(cache, ProjectsDir("testdata"))
	w := createIndex(ix.path)
	dropped := ""
	for _, p := range sortedKeys(all) {
		if dropped == "" && strings.Contains(p, "-home-me-proj") {
			dropped = p
			continue
		}
		e := all[p]
		w.entry(p, e, len(e.Calls), func(i int) indexCall { return e.Calls[i] })
	}
	w.commit(ix.path)
	if _, err := Scan(context.Background(), "testdata", ScanOptions{CacheDir: cache, Filter: Filter{Project: "/home/me/proj"}}); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, openIndex(cache, ProjectsDir("testdata")).old, all)
}
