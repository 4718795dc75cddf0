package history

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func readAll(t *testing.T, in string, max int) ([]string, ReadStats) {
	t.Helper()
	lr := NewLineReader(strings.NewReader(in), max)
	var out []string
	for {
		l, err := lr.Next()
		if err == io.EOF {
			return out, lr.Stats
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(l))
	}
}

func TestLineReader(t *testing.T) {
	huge := strings.Repeat("x", 3*readBuf+17) // spans several buffers
	tests := []struct {
		name  string
		in    string
		max   int
		want  []string
		stats ReadStats
	}{
		{"plain", "a\nb\n", 0, []string{"a", "b"}, ReadStats{Lines: 2}},
		{"crlf", "a\r\nb\r\n", 0, []string{"a", "b"}, ReadStats{Lines: 2}},
		{"torn last line", "a\n{\"partial", 0, []string{"a"}, ReadStats{Lines: 1, Torn: 1}},
		{"empty", "", 0, nil, ReadStats{}},
		{"huge line", huge + "\nz\n", 0, []string{huge, "z"}, ReadStats{Lines: 2}},
		{"oversized skipped", "a\n" + huge + "\nz\n", readBuf, []string{"a", "z"}, ReadStats{Lines: 2, Oversized: 1}},
		{"oversized torn", "a\n" + huge, readBuf, []string{"a"}, ReadStats{Lines: 1, Torn: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, st := readAll(t, tt.in, tt.max)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d lines, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("line %d differs (len %d vs %d)", i, len(got[i]), len(tt.want[i]))
				}
			}
			if st != tt.stats {
				t.Errorf("stats = %+v, want %+v", st, tt.stats)
			}
		})
	}
}

func TestScanLine(t *testing.T) {
	line := []byte(`{"parentUuid":"p","isSidechain":true,"message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-8","content":[{"type":"text","text":"a \"quoted\" \\ text { ] "}],"usage":{"input_tokens":1}},"requestId":"req_1","type":"assistant","uuid":"u","timestamp":"2026-11-22T12:19:02.449Z","cwd":"/home/\u00e9","x":[1,{"y":null},-2.5e3,false]}`)
	var li lineInfo
	if err := scanLine(line, &li, true); err != nil {
		t.Fatal(err)
	}
	if !strIs(li.typ, "assistant") || !strIs(li.msgID, "msg_1") || !strIs(li.requestID, "req_1") || !strIs(li.model, "claude-opus-4-8") ||
		!li.isSidechain || strValue(li.cwd) != "/home/é" || !strIs(li.cwd, "/home/é") || string(li.usage) != `{"input_tokens":1}` || li.content[0] != '[' {
		t.Errorf("scanLine = %+v", li)
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a":}`, `{"a":1,}`, `{"a":[1}`, `{"a":"x}`, `{"a":1} x`, `{"a" 1}`} {
		if err := scanLine([]byte(bad), &li, false); err == nil {
			t.Errorf("scanLine(%q) accepted malformed JSON", bad)
		}
	}
}

func TestPromptText(t *testing.T) {
	tests := []struct {
		in     string
		text   string
		prompt bool
	}{
		{`"hello"`, "hello", true},
		{`[{"type":"text","text":"hi"},{"type":"image","source":{}}]`, "hi", true},
		{`[{"tool_use_id":"t","type":"tool_result","content":"x"}]`, "", false},
		{`[]`, "", false},
		{`null`, "", false},
	}
	for _, tt := range tests {
		text, ok := promptText([]byte(tt.in))
		if text != tt.text || ok != tt.prompt {
			t.Errorf("promptText(%s) = %q, %v", tt.in, text, ok)
		}
	}
}

func FuzzReadLine(f *testing.F) {
	f.Add([]byte("a\nb\n"), 8)
	f.Add([]byte(`{"type":"assistant","message":{"usage":{"input_tokens":1}}}`+"\n{torn"), 16)
	f.Add(bytes.Repeat([]byte("x"), 100), 10)
	f.Add([]byte(`{"type":"assist\u0061nt","timestamp":"2026-02-30T01:02:03.456Z","requestId":"r\u0031","message":{"id":"m","model":"x\"y","usage":{}}}`+"\n"), 1024)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 1 << 16
		}
		lr := NewLineReader(bytes.NewReader(data), max)
		sc := newScanner(false)
		var total int
		for {
			l, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l) > max {
				t.Fatalf("line of %d bytes returned over the %d limit", len(l), max)
			}
			if bytes.IndexByte(l, '\n') >= 0 {
				t.Fatal("line contains a newline")
			}
			total++
			var li lineInfo
			_ = scanLine(l, &li, true)
			// The allocation-free readers of raw fields equal decoding them.
			want, _ := time.Parse(time.RFC3339Nano, strValue(li.timestamp))
			if got := parseTime(li.timestamp); !got.Equal(want) || got.Location() != want.Location() {
				t.Fatalf("parseTime(%s) = %v, time.Parse = %v", li.timestamp, got, want)
			}
			if got, want := sc.rawCallKey(li.msgID, li.requestID), callKey(strValue(li.msgID), strValue(li.requestID)); got != want {
				t.Fatalf("rawCallKey(%s, %s) differs from callKey", li.msgID, li.requestID)
			}
			if got := internModel(map[string]string{}, li.model); got != strValue(li.model) {
				t.Fatalf("internModel(%s) = %q", li.model, got)
			}
			if strIs(li.typ, "assistant") != (strValue(li.typ) == "assistant") || strEmpty(li.msgID) != (strValue(li.msgID) == "") {
				t.Fatalf("strIs or strEmpty differ from strValue on %s, %s", li.typ, li.msgID)
			}
			// Reading the head first and then the rest is reading the line,
			// the type read in the head is the line's (the CLI writes no key
			// twice), and a prefix of a line tells the same type or nothing.
			var head lineInfo
			from, typed := scanHead(l, &head)
			headType := head.typ
			errWhole, errRest := scanLine(l, &li, false), scanLineFrom(l, &head, from, false)
			if (errWhole == nil) != (errRest == nil) || errWhole == nil && !reflect.DeepEqual(li, head) {
				t.Fatalf("scanHead (from %d) and scanLineFrom = %+v, %v; scanLine = %+v, %v", from, head, errRest, li, errWhole)
			}
			if typed && errWhole == nil && bytes.Count(l, []byte(`"type"`)) == 1 && !bytes.Equal(headType, li.typ) {
				t.Fatalf("scanHead's type %s, scanLine's %s", headType, li.typ)
			}
			var part lineInfo
			if _, ptyped := scanHead(l[:len(l)/2], &part); ptyped && (!typed || !bytes.Equal(part.typ, headType)) {
				t.Fatalf("scanHead of a prefix: type %s, of the line %s (%v)", part.typ, headType, typed)
			}
			_ = scanLine(l, &li, true)
			// The usage read with the line is parseUsage's of its raw object.
			var u Usage
			if err := parseUsage(li.usage, &u); li.usage != nil && ((err != nil) != li.usageBad || err == nil && u != li.u) {
				t.Fatalf("usage read with the line %+v (bad %v), parseUsage: %+v, %v", li.u, li.usageBad, u, err)
			}
			_, _ = promptText(li.content)
			_, _ = ParseEntry(l)
		}
		if total != lr.Stats.Lines {
			t.Fatalf("returned %d lines, counted %d", total, lr.Stats.Lines)
		}
	})
}

// TestParseTime checks the allocation-free path of parseTime against
// time.Parse, which it must equal.
func TestParseTime(t *testing.T) {
	for _, s := range []string{
		"2026-11-22T12:19:02.449Z", "2024-02-28T23:59:59.999Z", "2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z",
		"2026-13-01T00:00:00.000Z", "2026-00-01T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-01T00:60:00.000Z",
		"2026-01-01T00:00:60.000Z", "2026-01-01T00:00:00.00xZ", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123+02:00",
		"2026-01-01T00:00:00.123456789Z", "", "x", "2026-01-0a",
	} {
		want, _ := time.Parse(time.RFC3339Nano, s)
		raw, _ := json.Marshal(s)
		if got := parseTime(raw); !got.Equal(want) || got.Location() != want.Location() {
			t.Errorf("parseTime(%s) = %v, time.Parse = %v", raw, got, want)
		}
	}
	want := time.Date(2026, 1, 1, 0, 0, 0, 123e6, time.UTC)
	if got := parseTime([]byte(`"2026-01-01T00:00:00.12\u0033Z"`)); !got.Equal(want) {
		t.Errorf("parseTime of an escaped timestamp = %v, want %v", got, want)
	}
}

// TestRawCallKey checks that keys from raw strings equal callKey of their
// decoded values, escapes included.
func TestRawCallKey(t *testing.T) {
	s := newScanner(false)
	for _, c := range []struct{ msg, req, dm, dr string }{
		{`"msg_1"`, `"req_1"`, "msg_1", "req_1"},
		{`"msg_\u0031"`, `"req_1"`, "msg_1", "req_1"},
		{`""`, `"r"`, "", "r"},
		{`1`, `"r"`, "", "r"},
	} {
		if got, want := s.rawCallKey([]byte(c.msg), []byte(c.req)), callKey(c.dm, c.dr); got != want {
			t.Errorf("rawCallKey(%s, %s) = %x, want callKey(%q, %q) = %x", c.msg, c.req, got, c.dm, c.dr, want)
		}
		// The keys are hash/fnv's FNV-1a 128, as indexes of earlier
		// versions stored them.
		h := fnv.New128a()
		h.Write([]byte(c.dm + "\x00" + c.dr))
		sum := h.Sum(nil)
		if got, want := callKey(c.dm, c.dr), [2]uint64{binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:])}; got != want {
			t.Errorf("callKey(%q, %q) = %x, hash/fnv gives %x", c.dm, c.dr, got, want)
		}
	}
}

// FuzzLinePrefix reads input in pieces of any size with NextPrefix, taking
// long lines whole (Rest) or reading past them (SkipRest) in turn: the lines
// taken are those Next returns, and the counts are the same.
func FuzzLinePrefix(f *testing.F) {
	f.Add([]byte("a\nbbbbbbbb\ncc\n"), 4, 3, uint8(1))
	f.Add([]byte(strings.Repeat("x", 40)+"\n"+strings.Repeat("y", 10)), 16, 5, uint8(2))
	f.Add([]byte("{\"type\":\"user\",\"a\":\"xxxxxxxxxxxx\"}\r\n\n\n{\"t"), 64, 8, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, max, limit int, pattern uint8) {
		const skipped = "\x00skipped"
		max = 1 + int(uint(max)%200)
		limit = int(uint(limit) % 100)
		want, wantStats := readLines(t, NewLineReader(bytes.NewReader(data), max))
		lr := NewLineReader(&chunkReader{data: data, n: 1 + int(pattern%7)}, max)
		var got []string
		for i := 0; ; i++ {
			line, whole, err := lr.NextPrefix(limit)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !whole && len(line) < min(limit, max+1) {
				t.Fatalf("a prefix of %d bytes under the limit %d", len(line), limit)
			}
			switch {
			case whole:
				got = append(got, string(line))
			case pattern>>(i%8)&1 == 1:
				lines := lr.Stats.Lines
				if err := lr.SkipRest(); err != nil {
					t.Fatal(err)
				}
				if lr.Stats.Lines > lines {
					got = append(got, skipped) // else oversized or torn
				}
			default:
				rest, ok, err := lr.Rest()
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					got = append(got, string(rest))
				}
			}
		}
		if lr.Stats != wantStats {
			t.Fatalf("stats %+v, Next's %+v", lr.Stats, wantStats)
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, Next returned %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] && got[i] != skipped {
				t.Fatalf("line %d = %q, Next's %q", i, got[i], want[i])
			}
		}
	})
}

func readLines(t *testing.T, lr *LineReader) ([]string, ReadStats) {
	t.Helper()
	var out []string
	for {
		l, err := lr.Next()
		if err == io.EOF {
			return out, lr.Stats
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(l))
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}
