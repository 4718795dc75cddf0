// Package forward is the sandbox's forwarder: the first process inside a
// job's sandbox, which gives the sandbox's own loopback a way out through
// pneuma's proxy and runs the CLI as its child. It imports only the
// standard library's process and network packages, so that the small
// pneuma-sandbox-forward binary built from it starts in a few
// milliseconds; pneuma's own binary runs it too (sandbox.RunForwarder).
package forward

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// Command is the hidden first argument that makes a binary the forwarder.
const Command = "__sandbox-forward"

// Stdio are the standard streams the forwarder hands to the command.
type Stdio struct{ In, Out, Err *os.File }

// forwardArgs are the forwarder's arguments: the proxy socket, the proxy
// port, raw ports and the command to run.
type forwardArgs struct {
	socket string
	listen int
	raw    []int
	argv   []string
}

func parseForward(args []string) (forwardArgs, error) {
	var f forwardArgs
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			f.argv = args[i+1:]
			break
		}
		if i+1 >= len(args) {
			return f, fmt.Errorf("%s needs a value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--socket":
			f.socket = v
		case "--listen", "--raw":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 65535 {
				return f, fmt.Errorf("%s %q is not a port", a, v)
			}
			if a == "--listen" {
				f.listen = n
			} else {
				f.raw = append(f.raw, n)
			}
		default:
			return f, fmt.Errorf("unknown argument %q", a)
		}
	}
	if f.socket == "" || f.listen == 0 || len(f.argv) == 0 {
		return f, errors.New("usage: " + Command + " --socket PATH --listen PORT [--raw PORT] -- COMMAND [ARGS]")
	}
	return f, nil
}

// Run runs inside the sandbox: it listens on 127.0.0.1 (the sandbox's
// own loopback) on the proxy port, relaying each connection to the proxy's
// unix socket, and on each raw port, tunnelling each connection through
// the proxy to the same port of the host's loopback. It runs the command
// as its child and returns its exit code; the sandbox ends with it.
func Run(args []string, stdio Stdio) int {
	stderr := stdio.Err
	f, err := parseForward(args)
	if err != nil {
		fmt.Fprintf(stderr, "pneuma sandbox: %v\n", err)
		return 125
	}
	if err := listen(f.listen, func(c net.Conn) { relay(c, f.socket, "") }); err != nil {
		fmt.Fprintf(stderr, "pneuma sandbox: proxy port: %v\n", err)
		return 125
	}
	for _, port := range f.raw {
		target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := listen(port, func(c net.Conn) { relay(c, f.socket, target) }); err != nil {
			fmt.Fprintf(stderr, "pneuma sandbox: port %d: %v\n", port, err)
			return 125
		}
	}
	return runChild(f.argv, stdio)
}

// listen serves 127.0.0.1:port with handle, one goroutine per connection,
// for the life of the process.
func listen(port int, handle func(net.Conn)) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return nil
}

// relay joins c to the proxy; with a target it first asks the proxy for a
// tunnel there, so that a client that knows nothing of proxies gets one.
func relay(c net.Conn, socket, target string) {
	up, err := net.Dial("unix", socket)
	if err != nil {
		_ = c.Close()
		return
	}
	if target != "" {
		if _, err := fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
			_, _ = up.Close(), c.Close()
			return
		}
		br := bufio.NewReader(up)
		if !tunnelOpened(br) {
			_, _ = up.Close(), c.Close()
			return
		}
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := c.Write(b); err != nil {
				_, _ = up.Close(), c.Close()
				return
			}
		}
	}
	splice(c, up)
}

// runChild runs argv with the forwarder's standard streams, passes on the
// signals the forwarder gets, and returns the child's exit code (128+signal
// when a signal ended it).
func runChild(argv []string, stdio Stdio) int {
	stderr := stdio.Err
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	cmd.SysProcAttr = childAttr()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "pneuma sandbox: start %s: %v\n", argv[0], err)
		return 127
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s) // gone already: nothing to pass on
		}
	}()
	err := cmd.Wait()
	signal.Stop(sigs)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintf(stderr, "pneuma sandbox: wait for %s: %v\n", argv[0], err)
		return 125
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// tunnelOpened reads the proxy's answer to a CONNECT: true for a 200 status
// line, its header read up to the blank line that ends it.
func tunnelOpened(br *bufio.Reader) bool {
	status, err := br.ReadString('\n')
	if err != nil {
		return false
	}
	fields := strings.Fields(status)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "HTTP/1.") || fields[1] != "200" {
		return false
	}
	for n := 0; n < 100; n++ {
		line, err := br.ReadString('\n')
		if err != nil || len(line) > 8<<10 {
			return false
		}
		if strings.TrimRight(line, "\r\n") == "" {
			return true
		}
	}
	return false
}

// splice copies both ways until either side ends, then closes both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // ends when either side closes
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}
