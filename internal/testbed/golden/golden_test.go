package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, args...))
}

func TestCheckFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		got  string
		want string // in the failure; "" when it passes
	}{
		{"same", "a\nb\nc\n", ""},
		{"a changed line", "a\nB\nc\n", "line 2\n got: \"B\"\nwant: \"b\""},
		{"a missing line", "a\nb\n", "line 3\n got: \"\"\nwant: \"c\""},
		{"an extra line", "a\nb\nc\nd\n", "line 4\n got: \"d\"\nwant: \"\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			CheckFile(r, path, []byte(tt.got))
			switch {
			case tt.want == "" && len(r.errs)+len(r.fatals) > 0:
				t.Errorf("failed: %v %v", r.errs, r.fatals)
			case tt.want != "" && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tt.want)):
				t.Errorf("failures %q, want one containing %q", r.errs, tt.want)
			}
		})
	}
}

func TestCheckFileMissing(t *testing.T) {
	r := &recorder{TB: t}
	CheckFile(r, filepath.Join(t.TempDir(), "none.golden"), []byte("x"))
	if len(r.fatals) != 1 || !strings.Contains(r.fatals[0], "go test -update creates it") {
		t.Errorf("fatals %q, want one saying how to create the file", r.fatals)
	}
}

func TestUpdateWrites(t *testing.T) {
	defer func(old bool) { *update = old }(*update)
	*update = true
	path := filepath.Join(t.TempDir(), "sub", "new.golden")
	CheckFile(t, path, []byte("fresh\n"))
	if data, err := os.ReadFile(path); err != nil || string(data) != "fresh\n" {
		t.Errorf("golden file = %q, %v; want it written", data, err)
	}
}
