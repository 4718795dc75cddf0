package eventlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigObj is an event object whose text field is n bytes long.
func bigObj(n int, fill byte) []byte {
	return []byte(`{"type":"user_message","content":"` + strings.Repeat(string(fill), n) + `"}`)
}

// TestLongLinesSurviveReopen is finding 1 of issue 26: lines longer than the
// reader's buffer (a 270,000 character message, a 300 KB answer, several
// MB) are read back whole after any number of reopens.
func TestLongLinesSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	sizes := []int{10, 270_000, 300 << 10, 5 << 20, 20, 256<<10 - 8, 256 << 10, 600 << 10}
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i, n := range sizes {
		if _, err := l.Append("user_message", bigObj(n, byte('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := l.Read(0, 0)
	for _, ev := range evs {
		want = append(want, append([]byte(nil), ev.Raw...))
	}
	l.Close()
	for restart := range 3 {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatalf("reopen %d: %v", restart, err)
		}
		if l.LastSeq() != int64(len(sizes)+restart) {
			t.Fatalf("reopen %d: last seq %d", restart, l.LastSeq())
		}
		evs, err := l.Read(0, len(sizes))
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range evs {
			if !bytes.Equal(ev.Raw, want[i]) || ev.Seq != int64(i+1) || ev.Type != "user_message" {
				t.Fatalf("reopen %d: event %d differs (%d bytes, want %d)", restart, i+1, len(ev.Raw), len(want[i]))
			}
		}
		if _, err := l.Append("user_message", bigObj(400<<10, 'z')); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
}

// A line longer than MaxLine is an error naming the file and line, and
// Append refuses to write one.
func TestLineCap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	good := `{"seq":1,"type":"x"}` + "\n"
	long := `{"seq":2,"type":"x","t":"` + strings.Repeat("y", 300) + `"}` + "\n"
	if err := os.WriteFile(path, []byte(good+long), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := openCapped(path, nil, 200)
	var de *DamageError
	if !errors.As(err, &de) || de.Line != 2 || !strings.Contains(err.Error(), path+":2:") || !strings.Contains(err.Error(), "200 byte limit") {
		t.Fatalf("err = %v, want a DamageError naming %s:2 and the limit", err, path)
	}
	l := open(t, filepath.Join(dir, "b.jsonl"))
	l.maxLine = 100
	if _, err := l.Append("x", bigObj(200, 'q')); err == nil || !strings.Contains(err.Error(), "100 byte limit") {
		t.Fatalf("append over the cap: %v", err)
	}
	if seq, err := l.Append("x", obj("x", 1)); seq != 1 || err != nil {
		t.Fatalf("append after a refused one: %d %v", seq, err)
	}
}

// TestReadPage bounds a page in bytes; an event larger than the bound is
// a page of its own.
func TestReadPage(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "events.jsonl"))
	for i, n := range []int{100, 100, 100, 5000, 100, 100} {
		l.Append("x", bigObj(n, byte('a'+i)))
	}
	var pages [][]int64
	for after := int64(0); after < l.LastSeq(); {
		evs, err := l.ReadPage(after, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range evs {
			seqs = append(seqs, ev.Seq)
		}
		pages = append(pages, seqs)
		after = evs[len(evs)-1].Seq
	}
	if got := fmt.Sprint(pages); got != "[[1 2 3] [4] [5 6]]" {
		t.Fatalf("pages %s", got)
	}
}

// TestSalvage opens a damaged log read-only: the events before the damage
// replay, nothing is written, the file is left as it was.
func TestSalvage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	data := `{"seq":1,"type":"x"}` + "\n" + `{"seq":2,"type":"y"}` + "\n" + `{"seq":2,"type":"dup"}` + "\n" + `{"seq":3,"type":"z"}` + "\n"
	os.WriteFile(path, []byte(data), 0o644)
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Fatalf("open: %v", err)
	}
	l, err := Salvage(path)
	if err != nil {
		t.Fatal(err)
	}
	if l.LastSeq() != 2 {
		t.Fatalf("salvaged %d events", l.LastSeq())
	}
	if _, err := l.Append("x", obj("x", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to a salvaged log: %v", err)
	}
	evs, _ := l.Read(0, 0)
	if len(evs) != 2 || evs[1].Type != "y" {
		t.Fatalf("salvaged events %+v", evs)
	}
	if got, _ := os.ReadFile(path); string(got) != data {
		t.Fatalf("the damaged file changed:\n%s", got)
	}
	l.Close()
}

// FuzzOpen: any bytes on disk open as a log or fail with a DamageError
// (never a panic); what opens reads back whole and takes appends.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"seq":1,"type":"x"}` + "\n" + `{"seq":2,"type":"y"}` + "\n"))
	f.Add([]byte(`{"seq":1,"type":"x"}` + "\n" + `{"seq":2,"ty`))
	f.Add([]byte(`{"seq":1,"type":"x","t":"` + strings.Repeat("a", 300) + `"}` + "\n"))
	f.Add([]byte("garbage\n"))
	f.Add([]byte(`{"seq":1}` + "\n" + `{"seq":1}` + "\n"))
	f.Add([]byte(`{"seq":-1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A small buffer and cap, so that short inputs cross both.
		l, err := openWith(path, nil, 64, 256)
		if err != nil {
			var de *DamageError
			if !errors.As(err, &de) {
				t.Fatalf("open: %v is not a DamageError", err)
			}
			s, err := salvageWith(path, 64, 256)
			if err != nil {
				t.Fatalf("salvage: %v", err)
			}
			if s.LastSeq() >= int64(de.Line) {
				t.Fatalf("salvaged %d events of a log damaged at line %d", s.LastSeq(), de.Line)
			}
			s.Close()
			return
		}
		defer l.Close()
		n := l.LastSeq()
		evs, err := l.Read(0, 0)
		if err != nil || int64(len(evs)) != n {
			t.Fatalf("read %d of %d: %v", len(evs), n, err)
		}
		for i, ev := range evs {
			if ev.Seq != int64(i+1) || !bytes.HasPrefix(ev.Raw, []byte(fmt.Sprintf(`{"seq":%d`, i+1))) {
				t.Fatalf("event %d: %q", i+1, ev.Raw)
			}
		}
		if seq, err := l.Append("x", []byte(`{"type":"x"}`)); err != nil || seq != n+1 {
			t.Fatalf("append: %d %v", seq, err)
		}
	})
}
