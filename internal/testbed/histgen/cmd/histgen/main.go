// Command histgen writes a synthetic Claude Code projects tree for the
// history benchmark: histgen -out DIR [-size 1GB] [-seed N], or one large
// session with -session-size 200MB.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pneuma-cli/pneuma/internal/testbed/histgen"
)

func main() {
	out := flag.String("out", "", "directory to write (DIR/projects/...)")
	size := flag.String("size", "1GB", "approximate corpus size")
	session := flag.String("session-size", "", "write one session of this size instead, print its path")
	seed := flag.Uint64("seed", 1, "random seed")
	projects := flag.Int("projects", 40, "number of project directories")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "histgen: -out is required")
		os.Exit(2)
	}
	if *session != "" {
		n, err := parseSize(*session)
		if err != nil {
			fmt.Fprintln(os.Stderr, "histgen:", err)
			os.Exit(2)
		}
		p, err := histgen.GenerateSession(*out, n, *seed)
		if err != nil {
			fmt.Fprintln(os.Stderr, "histgen:", err)
			os.Exit(1)
		}
		fmt.Println(p)
		return
	}
	n, err := parseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "histgen:", err)
		os.Exit(2)
	}
	st, err := histgen.Generate(context.Background(), *out, histgen.Options{Bytes: n, Projects: *projects, Seed: *seed})
	if err != nil {
		fmt.Fprintln(os.Stderr, "histgen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d files (%d sessions, %d subagents, %d forks), %d lines, %d bytes, largest line %d bytes\n",
		st.Files, st.Sessions, st.Subagents, st.Forks, st.Lines, st.Bytes, st.LargestLine)
}

func parseSize(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}
