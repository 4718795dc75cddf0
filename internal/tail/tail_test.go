package tail

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

func TestBuffer(t *testing.T) {
	tests := []struct {
		name        string
		max         int
		writes      []string
		want        string
		wantDropped int64
	}{
		{"nothing", 4, nil, "", 0},
		{"fits", 8, []string{"ab", "cd"}, "abcd", 0},
		{"exactly the bound", 4, []string{"ab", "cd"}, "abcd", 0},
		{"older bytes go first", 4, []string{"abc", "def"}, "cdef", 2},
		{"one write past the bound", 3, []string{"abcdefg"}, "efg", 4},
		{"many small writes", 3, []string{"a", "b", "c", "d", "e"}, "cde", 2},
		{"never starts inside a rune", 4, []string{"xé€"}, "€", 3},       // keeps é's second byte, then skips it
		{"a whole rune at the start stays", 5, []string{"xé€"}, "é€", 1}, // 1+2+3 bytes: only x is dropped
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(tt.max)
			for _, w := range tt.writes {
				if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := b.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := b.Dropped(); got != tt.wantDropped {
				t.Errorf("Dropped() = %d, want %d", got, tt.wantDropped)
			}
		})
	}
}

// TestBufferReadFrom: io.Copy from a file (what os/exec does with a
// child's pipe) goes through ReadFrom and keeps the same end; a read error
// is returned.
func TestBufferReadFrom(t *testing.T) {
	data := strings.Repeat("0123456789", 2000) // several of ReadFrom's reads
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	b := New(15)
	if n, err := io.Copy(b, f); n != int64(len(data)) || err != nil {
		t.Fatalf("io.Copy = %d, %v", n, err)
	}
	f.Close()
	if got := b.String(); got != data[len(data)-15:] || b.Dropped() != int64(len(data)-15) {
		t.Errorf("kept %q, dropped %d", got, b.Dropped())
	}
	boom := errors.New("boom")
	if _, err := New(4).ReadFrom(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom))); !errors.Is(err, boom) {
		t.Errorf("ReadFrom error %v, want boom", err)
	}
}

func TestBufferLast(t *testing.T) {
	b := New(8)
	b.Write([]byte("0123456789"))
	if got := string(b.Last(3)); got != "789" {
		t.Errorf("Last(3) = %q", got)
	}
	if got := string(b.Last(100)); got != "23456789" {
		t.Errorf("Last(100) = %q, want all that is kept", got)
	}
}

// closer records what File writes and whether it was closed.
type closer struct {
	bytes.Buffer
	closed int
	fail   error
}

func (c *closer) Write(p []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	return c.Buffer.Write(p)
}

func (c *closer) Close() error { c.closed++; return nil }

func TestFile(t *testing.T) {
	tests := []struct {
		name       string
		head, keep int
		writes     []string
		want       string
		wantTail   string // Tail(3), bounded by keep
	}{
		{"all fits in the head", 10, 4, []string{"abc", "def"}, "abcdef", "def"},
		{"the tail follows the head", 4, 4, []string{"abcdef"}, "abcdef", "def"},
		{"a gap gets a note", 3, 4, []string{"abc", "0123456", "wxyz"}, "abc\n[pneuma: 7 bytes of stderr left out; the last 4 follow]\nwxyz", "xyz"},
		{"a head cut inside one write", 2, 2, []string{"abcdefgh"}, "ab\n[pneuma: 4 bytes of stderr left out; the last 2 follow]\ngh", "gh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w closer
			f := NewFile(&w, "stderr", tt.head, tt.keep)
			for _, s := range tt.writes {
				if n, err := f.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := f.Tail(3); got != tt.wantTail {
				t.Errorf("Tail(3) = %q, want %q", got, tt.wantTail)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil || w.closed != 1 {
				t.Errorf("second Close() = %v, closed %d times", err, w.closed)
			}
			if got := w.String(); got != tt.want {
				t.Errorf("file = %q\nwant   %q", got, tt.want)
			}
		})
	}
}

func TestFileWriteError(t *testing.T) {
	w := &closer{fail: errors.New("disk full")}
	f := NewFile(w, "stderr", 10, 4)
	if _, err := f.Write([]byte("abc")); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Write() error = %v, want the writer's", err)
	}
}
