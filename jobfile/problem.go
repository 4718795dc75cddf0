package jobfile

import (
	"fmt"
	"strconv"
	"strings"
)

// Pos is a position in a file, or in a JSON request, where Path names the
// field ("policy.allow[0]").
type Pos struct {
	File      string
	Line, Col int
	Path      string
}

func (p Pos) String() string {
	switch {
	case p.Path != "":
		return p.Path
	case p.Line == 0:
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Problem is one thing wrong with a jobs file, at a position.
type Problem struct {
	Pos Pos
	Msg string
}

func (p Problem) String() string { return p.Pos.String() + ": " + p.Msg }

// DecodeError lists every problem found in a jobs file.
type DecodeError struct {
	Problems []Problem
}

func (e *DecodeError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func yamlSyntaxProblem(path string, err error) Problem {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 1
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, perr := strconv.Atoi(rest[:i]); perr == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return Problem{Pos: Pos{File: path, Line: line, Col: 1}, Msg: "invalid YAML: " + msg}
}

// Suggest returns ` (did you mean "x"?)` for a near miss among known names.
func Suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := levenshtein(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
