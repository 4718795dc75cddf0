package history

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// The index file: indexMagic, the version (uvarint), then entries, each a
// 1 byte and the fields of encodeEntry, then a 0 byte and the number of
// entries. Integers are varints, call keys 8 bytes little-endian, strings
// and times (time.Time.MarshalBinary, which keeps the offset) a length and
// their bytes; a call's model is the index of one named earlier in the entry,
// or the next index followed by the name.

const (
	indexMagic      = "pneuma history index\n"
	indexVersion    = 5 // changes whenever what a scan extracts or the file's layout changes
	indexTempPrefix = ".index-"
	// indexMaxString bounds a string read from an index (paths, working
	// directories, first prompts of 1,000 characters).
	indexMaxString = 1 << 20
)

var errIndex = errors.New("malformed index")

// indexWriter writes a new index to a temporary file next to it.
type indexWriter struct {
	f   *os.File
	w   *bufio.Writer
	b   []byte // one entry, encoded
	n   uint64 // entries written
	err error
}

func createIndex(path string) *indexWriter {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return &indexWriter{err: err}
	}
	f, err := os.CreateTemp(filepath.Dir(path), indexTempPrefix+"*")
	if err != nil {
		return &indexWriter{err: err}
	}
	w := &indexWriter{f: f, w: bufio.NewWriterSize(f, 64<<10)}
	w.write(binary.AppendUvarint([]byte(indexMagic), indexVersion))
	return w
}

func (w *indexWriter) write(b []byte) {
	if w.err == nil {
		_, w.err = w.w.Write(b)
	}
}

// entry writes the entry of path; its n calls are callAt(0..n-1) (e.Calls
// is not read).
func (w *indexWriter) entry(path string, e *indexEntry, n int, callAt func(int) indexCall) {
	if w.err != nil {
		return
	}
	b := append(w.b[:0], 1)
	b = appendString(b, path)
	b = binary.AppendVarint(b, e.Size)
	b = binary.AppendVarint(b, e.MTime)
	b = append(b, boolBit(e.Summary)|boolBit(e.ForkLike)<<1)
	b = appendTime(b, e.PeekStart)
	b = appendString(b, e.Cwd)
	b = appendTime(b, e.Start)
	b = appendTime(b, e.Last)
	for _, v := range []int{e.Stats.Lines, e.Stats.Malformed, e.Stats.Oversized, e.Stats.Torn, e.Stats.Repaired,
		e.Prompts, e.Compacted, e.Interrupted, e.APIErrors, e.InlineAgent} {
		b = binary.AppendVarint(b, int64(v))
	}
	b = appendString(b, e.FirstPrompt)
	b = binary.AppendUvarint(b, uint64(n))
	var models []string
	for i := range n {
		c := callAt(i)
		b = binary.LittleEndian.AppendUint64(b, c.K0)
		b = binary.LittleEndian.AppendUint64(b, c.K1)
		b = binary.AppendVarint(b, c.TS)
		m := 0
		for m < len(models) && models[m] != c.Model {
			m++
		}
		b = binary.AppendUvarint(b, uint64(m))
		if m == len(models) {
			models = append(models, c.Model)
			b = appendString(b, c.Model)
		}
		b = append(b, boolBit(c.Side))
		for _, v := range [...]int64{c.In, c.Out, c.CW, c.CR, c.E5, c.E1} {
			b = binary.AppendVarint(b, v)
		}
	}
	w.b = b
	w.n++
	w.write(b)
}

// commit ends the index and puts it in place of the one at path.
func (w *indexWriter) commit(path string) {
	if w.f == nil {
		return
	}
	w.write(binary.AppendUvarint([]byte{0}, w.n))
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if err := w.f.Close(); w.err == nil {
		w.err = err
	}
	if w.err == nil {
		w.err = os.Rename(w.f.Name(), path)
	}
	if w.err != nil {
		os.Remove(w.f.Name())
	}
}

// abort removes the unfinished index (w may be nil).
func (w *indexWriter) abort() {
	if w == nil || w.f == nil {
		return
	}
	w.f.Close()
	os.Remove(w.f.Name())
}

func boolBit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendTime(b []byte, t time.Time) []byte {
	tb, err := t.MarshalBinary()
	if err != nil { // an offset that is not whole minutes: keep the instant
		tb, _ = t.UTC().MarshalBinary()
	}
	return append(binary.AppendUvarint(b, uint64(len(tb))), tb...)
}

// readIndex reads an index file; any damage is an error (the index is then
// rebuilt).
func readIndex(r *bufio.Reader) (map[string]*indexEntry, error) {
	head := make([]byte, len(indexMagic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != indexMagic {
		return nil, errIndex
	}
	d := &indexReader{r: r}
	if v := d.uvarint(); d.err != nil || v != indexVersion {
		return nil, fmt.Errorf("index version %d: %w", v, errIndex)
	}
	files := make(map[string]*indexEntry)
	for n := uint64(0); ; n++ {
		tag, err := r.ReadByte()
		if err != nil {
			return nil, errIndex
		}
		if tag == 0 {
			if count := d.uvarint(); d.err != nil || count != n {
				return nil, errIndex
			}
			if _, err := r.ReadByte(); err != io.EOF {
				return nil, errIndex
			}
			return files, nil
		}
		if tag != 1 {
			return nil, errIndex
		}
		path, e := d.entry()
		if d.err != nil {
			return nil, errIndex
		}
		files[path] = e
	}
}

// indexReader decodes an index; the first error sticks.
type indexReader struct {
	r   *bufio.Reader
	err error
}

func (d *indexReader) entry() (string, *indexEntry) {
	path := d.str()
	e := &indexEntry{Size: d.varint(), MTime: d.varint()}
	flags := d.byte()
	e.Summary, e.ForkLike = flags&1 != 0, flags&2 != 0
	e.PeekStart, e.Cwd, e.Start, e.Last = d.time(), d.str(), d.time(), d.time()
	for _, p := range []*int{&e.Stats.Lines, &e.Stats.Malformed, &e.Stats.Oversized, &e.Stats.Torn, &e.Stats.Repaired,
		&e.Prompts, &e.Compacted, &e.Interrupted, &e.APIErrors, &e.InlineAgent} {
		*p = int(d.varint())
	}
	e.FirstPrompt = d.str()
	n := d.uvarint()
	e.Calls = make([]indexCall, 0, min(n, 1024))
	var models []string
	for i := uint64(0); i < n && d.err == nil; i++ {
		c := indexCall{K0: d.u64(), K1: d.u64(), TS: d.varint()}
		switch m := d.uvarint(); {
		case m < uint64(len(models)):
			c.Model = models[m]
		case m == uint64(len(models)):
			c.Model = d.str()
			models = append(models, c.Model)
		default:
			d.err = errIndex
		}
		c.Side = d.byte() != 0
		for _, p := range [...]*int64{&c.In, &c.Out, &c.CW, &c.CR, &c.E5, &c.E1} {
			*p = d.varint()
		}
		e.Calls = append(e.Calls, c)
	}
	return path, e
}

func (d *indexReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	d.err = err
	return v
}

func (d *indexReader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.err = err
	return v
}

func (d *indexReader) byte() byte {
	if d.err != nil {
		return 0
	}
	c, err := d.r.ReadByte()
	d.err = err
	return c
}

func (d *indexReader) u64() uint64 {
	var b [8]byte
	if d.err == nil {
		_, d.err = io.ReadFull(d.r, b[:])
	}
	return binary.LittleEndian.Uint64(b[:])
}

func (d *indexReader) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > indexMaxString {
		d.err = errIndex
		return nil
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	return b
}

func (d *indexReader) str() string { return string(d.bytes()) }

func (d *indexReader) time() time.Time {
	var t time.Time
	if b := d.bytes(); d.err == nil {
		d.err = t.UnmarshalBinary(b)
	}
	return t
}
