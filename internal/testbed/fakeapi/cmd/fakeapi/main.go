// Command fakeapi serves the fake Anthropic Messages API of package fakeapi on
// a loopback port, for scripts (benchmarks, manual runs of the Claude Code CLI
// without credentials). It prints the base URL on the first line of stdout
// (and to -url-file when given), then serves until SIGINT or SIGTERM.
//
// Every conversation gets one scripted agent turn: with -write NAME it first
// writes NAME (a path relative to the CLI's working directory, which the CLI
// states in its system prompt) with Write, then answers -text; otherwise it
// answers -text at once.
//
//	go build -o fakeapi ./internal/fakeapi/cmd/fakeapi
//	./fakeapi -text ok -url-file api.url & pid=$!
//	# wait until api.url exists, then
//	ANTHROPIC_BASE_URL=$(cat api.url) ANTHROPIC_API_KEY=sk-test claude -p hi
//	kill $pid
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/pneuma-cli/pneuma/internal/testbed/fakeapi"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "fakeapi:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakeapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	urlFile := fs.String("url-file", "", "also write the base URL to this file (atomically, once listening)")
	text := fs.String("text", "done", "the agent's final answer")
	write := fs.String("write", "", "file the agent writes first, relative to the CLI's working directory")
	verbose := fs.Bool("v", false, "log every request on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := loopback(*addr); err != nil {
		return err
	}
	logger := log.New(stderr, "", log.Lmicroseconds)
	opts := fakeapi.Options{Addr: *addr, NoRecord: true, Logf: func(string, ...any) {}}
	if *verbose {
		opts.Logf = logger.Printf
	}
	srv, err := fakeapi.Start(agent(*text, *write, logger), opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	if *urlFile != "" {
		if err := writeAtomic(*urlFile, srv.URL+"\n"); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, srv.URL)
	<-ctx.Done()
	return nil
}

// agent is the scripted agent: an optional Write, then text.
func agent(text, write string, logger *log.Logger) fakeapi.Handler {
	return func(r *fakeapi.Request) fakeapi.Response {
		if write == "" || r.HasToolResult() {
			return fakeapi.Text(text)
		}
		dir := r.WorkingDir()
		if dir == "" {
			logger.Printf("request #%d: no working directory in the system prompt; answering without writing", r.N)
			return fakeapi.Text(text)
		}
		return fakeapi.ToolUse(fakeapi.Write(filepath.Join(dir, write), "written by fakeapi at "+time.Now().UTC().Format(time.RFC3339)+"\n"))
	}
}

// loopback refuses to listen anywhere but on a loopback address: the fake
// accepts any API key.
func loopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad -addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-addr %q is not a loopback address", addr)
	}
	return nil
}

func writeAtomic(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write url file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write url file: %w", err)
	}
	return nil
}
