package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
)

// ForwardCommand is the hidden first argument that makes pneuma's binary
// the forwarder inside a sandbox (see Forward).
const ForwardCommand = "__sandbox-forward"

// Stdio are the standard streams the forwarder hands to the command.
type Stdio struct{ In, Out, Err *os.File }

// RunForwarder runs the forwarder when args (the process's arguments
// after its name) start with ForwardCommand, and returns its exit code and
// true; otherwise it returns at once with false. Call it first in main (and
// in the TestMain of tests whose binary stands in for pneuma's).
func RunForwarder(args []string, stdio Stdio) (int, bool) {
	if len(args) == 0 || args[0] != ForwardCommand {
		return 0, false
	}
	return Forward(args[1:], stdio), true
}

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
		return f, errors.New("usage: " + ForwardCommand + " --socket PATH --listen PORT [--raw PORT] -- COMMAND [ARGS]")
	}
	return f, nil
}

// Forward runs inside the sandbox: it listens on 127.0.0.1 (the sandbox's
// own loopback) on the proxy port, relaying each connection to the proxy's
// unix socket, and on each raw port, tunnelling each connection through
// the proxy to the same port of the host's loopback. It runs the command
// as its child and returns its exit code; the sandbox ends with it.
func Forward(args []string, stdio Stdio) int {
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
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
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
