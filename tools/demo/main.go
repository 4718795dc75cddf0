// Command demo runs jobs.example.yaml offline, end to end: it builds a
// scratch workspace (two git repositories and a shared docs directory), serves
// a fake Anthropic API whose scripted agent does each job's work through real
// tool calls, and runs `pneuma run` with the real Claude Code CLI against it.
// Nothing needs credentials or network; the workspace is kept for inspection.
//
//	go run ./internal/demo -- ./bin/pneuma .cache/claude/node_modules/@anthropic-ai/claude-code/bin/claude.exe
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the demo; it returns the process's exit code: pneuma's own when
// pneuma ran, 2 for bad usage, 3 when the demo could not set up.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jobs := fs.String("jobs", "jobs.example.yaml", "the jobs file to run (copied into the demo workspace)")
	parent := fs.String("workdir", "", "create the demo workspace under this directory (default: the system's temporary directory)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up on the whole run after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: demo [-jobs FILE] [-workdir DIR] [-timeout D] PNEUMA_BINARY CLAUDE_BINARY")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] == "--" { // `go run ./internal/demo -- a b`
		rest = rest[1:]
	}
	if len(rest) != 2 {
		fs.Usage()
		return 2
	}
	var bins [2]string
	for i, p := range rest {
		abs, err := absExecutable(p)
		if err != nil {
			fmt.Fprintf(stderr, "demo: %v\ndemo: build both with `make build claude`\n", err)
			return 3
		}
		bins[i] = abs
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	return demo(ctx, *jobs, *parent, bins[0], bins[1], stdout, stderr)
}

func absExecutable(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", p, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", p, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return abs, nil
}

func demo(ctx context.Context, jobsExample, parent, pneuma, claude string, stdout, stderr io.Writer) int {
	w, err := newWorkspace(ctx, jobsExample, parent)
	if err != nil {
		fmt.Fprintln(stderr, "demo: set up the workspace:", err)
		return 3
	}
	logPath := filepath.Join(w.Root, "fakeapi.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		fmt.Fprintln(stderr, "demo: create the fake API log:", err)
		return 3
	}
	defer logFile.Close()
	ag := &agent{sharedDocs: w.SharedDocs, delay: 15 * time.Millisecond}
	api, err := fakeapi.Start(ag.handle, fakeapi.Options{NoRecord: true, Logf: log.New(logFile, "", log.Lmicroseconds).Printf})
	if err != nil {
		fmt.Fprintln(stderr, "demo: start the fake API:", err)
		return 3
	}
	defer api.Close()

	fmt.Fprintf(stdout, "pneuma demo: workspace %s\n", w.Root)
	fmt.Fprintf(stdout, "pneuma demo: fake Anthropic API at %s (scripted agent, no credentials, no network)\n", api.URL)
	fmt.Fprintf(stdout, "pneuma demo: $ pneuma run jobs.yaml   (in %s)\n\n", w.App)

	cmd := exec.CommandContext(ctx, pneuma, "run", "--claude", claude, "jobs.yaml")
	cmd.Dir = w.App
	cmd.Env = environ(w.Home, api.URL)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, stdout, stderr
	// pneuma stops its jobs itself on SIGINT (a second one kills them at
	// once), so it gets exactly one: at our deadline, or when we are sent
	// SIGTERM. A Ctrl-C at the terminal already reaches it directly (same
	// process group); forwarding that too would count as the second.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 15 * time.Second
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "demo: run pneuma:", err)
		return 3
	}
	waited := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == syscall.SIGTERM {
					_ = cmd.Process.Signal(os.Interrupt)
				}
			case <-waited:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(waited)
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		fmt.Fprintln(stderr, "demo: run pneuma:", err)
		return 3
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "demo: stopped pneuma: the demo's -timeout passed")
	}
	fmt.Fprintf(stdout, "\npneuma demo: pneuma exited %d after %s\n", code, time.Since(start).Round(100*time.Millisecond))
	where(ctx, w, logPath, stdout)
	return code
}

// environ is pneuma's environment: hermetic like the tests' (a scratch HOME,
// the fake API, no telemetry or updates), plus PATH and TERM, and for the
// fix-lint job's `go vet` the user's build cache, the local toolchain and no
// module proxy (offline, and fast).
func environ(home, apiURL string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + apiURL,
		"ANTHROPIC_API_KEY=sk-demo-not-a-real-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=1",
		"GIT_CONFIG_NOSYSTEM=1",
	}
	if c := goCache(); c != "" {
		env = append(env, "GOCACHE="+c)
	}
	env = append(env, "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod")
	if t := os.Getenv("TERM"); t != "" {
		env = append(env, "TERM="+t)
	}
	if os.Geteuid() == 0 {
		env = append(env, "IS_SANDBOX=1") // else the CLI refuses bypassPermissions as root
	}
	return env
}

// goCache is the user's Go build cache, where the go command would look:
// $GOCACHE, else the go-build directory of the user's cache directory.
func goCache() string {
	if c := os.Getenv("GOCACHE"); c != "" {
		return c
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "go-build")
	}
	return ""
}

// where prints what the run left to look at: reports, branches, the log.
func where(ctx context.Context, w *workspace, logPath string, out io.Writer) {
	fmt.Fprintln(out, "\nWhat the run left behind (nothing is deleted):")
	for _, repo := range []string{w.App, w.Other} {
		runs, _ := filepath.Glob(filepath.Join(repo, ".pneuma", "runs", "*", "report.json"))
		sort.Strings(runs)
		for _, r := range runs {
			fmt.Fprintf(out, "  report      %s\n", r)
			if _, err := os.Stat(filepath.Join(filepath.Dir(r), "summary.md")); err == nil {
				fmt.Fprintf(out, "  summary     %s\n", filepath.Join(filepath.Dir(r), "summary.md"))
			}
		}
		branches, err := git(ctx, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/pneuma/")
		if err != nil {
			continue
		}
		for _, b := range strings.Fields(branches) {
			stat, _ := git(ctx, repo, "diff", "--shortstat", "main..."+b)
			if stat == "" {
				stat = "no changes"
			}
			fmt.Fprintf(out, "  branch      %s  (%s)\n              git -C %s diff main...%s\n", b, strings.TrimSpace(stat), repo, b)
		}
	}
	fmt.Fprintf(out, "  API log     %s\n", logPath)
	fmt.Fprintf(out, "  remove it   rm -rf %s\n", w.Root)
}
