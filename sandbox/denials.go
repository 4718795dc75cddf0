package sandbox

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Denied is a path the sandbox kept a job from, as its tool results show:
// a write refused with "Read-only file system" (EROFS), or a read of a
// path that exists outside but that the sandbox hid ("No such file or
// directory", "does not exist"), and how often.
type Denied struct {
	Op    string `json:"op"` // "read" or "write"
	Path  string `json:"path"`
	Count int    `json:"count"`
}

// denials counts what the sandbox refused, from the job's tool results.
type denials struct {
	mu     sync.Mutex
	counts map[Denied]int // Count zero in keys
}

// maxDeniedPaths bounds the listed paths; the rest count as "(other)".
const maxDeniedPaths = 100

// scanLimit bounds how much of one tool result is read.
const scanLimit = 256 << 10

var (
	absPath  = regexp.MustCompile(`(?:^|[\s'"\x60(])(/[^\s'"\x60:,)]+)`)
	readOnly = regexp.MustCompile(`(?i)read-only file system`)
	missing  = regexp.MustCompile(`(?i)no such file or directory|does not exist`)
)

// NoteToolResult counts the denials that one tool call's result shows:
// text is the result, path the file the tool was given ("" for none, as
// for Bash). A read counts only when its path exists outside, judged
// here: the sandbox hid it.
func (b *Box) NoteToolResult(path, text string) {
	if len(text) > scanLimit {
		text = text[:scanLimit]
	}
	for _, line := range strings.Split(text, "\n") {
		if loc := readOnly.FindStringIndex(line); loc != nil {
			if p := firstPath(line, path, loc[0], loc[1]); p != "" {
				b.denied.add("write", p)
			}
		} else if loc := missing.FindStringIndex(line); loc != nil {
			if p := firstPath(line, path, loc[0], loc[1]); p != "" && existsOutside(p) {
				b.denied.add("read", p)
			}
		}
	}
}

// firstPath is path, the tool's own, when it is absolute, or else the
// path the error at [at, end) in line names: the last absolute path before
// it ("bash: line 1: /x: Read-only file system"), or else the first after
// it ("EROFS: read-only file system, open '/x'").
func firstPath(line, path string, at, end int) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	if ms := absPath.FindAllStringSubmatch(line[:at], -1); len(ms) > 0 {
		return filepath.Clean(ms[len(ms)-1][1])
	}
	if m := absPath.FindStringSubmatch(line[end:]); m != nil {
		return filepath.Clean(m[1])
	}
	return ""
}

func existsOutside(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func (d *denials) add(op, path string) {
	if len(path) > 300 {
		path = path[:300]
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.counts == nil {
		d.counts = map[Denied]int{}
	}
	k := Denied{Op: op, Path: path}
	if _, seen := d.counts[k]; !seen && len(d.counts) >= maxDeniedPaths {
		k.Path = "(other)"
	}
	d.counts[k]++
}

// list returns the denials, most frequent first.
func (d *denials) list() []Denied {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Denied, 0, len(d.counts))
	for k, n := range d.counts {
		k.Count = n
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		if out[i].Op != out[j].Op {
			return out[i].Op < out[j].Op
		}
		return out[i].Path < out[j].Path
	})
	return out
}
