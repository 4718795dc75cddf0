package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"
)

// killKey carries the channel closed on a second signal.
type killKey struct{}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM (a
// graceful stop) and a channel, reachable through killSignal, closed by the
// second (stop everything now).
func signalContext(parent context.Context, errOut io.Writer) (context.Context, func()) {
	kill := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(parent, killKey{}, (<-chan struct{})(kill)))
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				n++
				if n == 1 {
					fmt.Fprintf(errOut, "\npneuma: %v: stopping jobs gracefully (again to kill them now)\n", s)
					cancel()
					continue
				}
				fmt.Fprintf(errOut, "\npneuma: %v: killing all jobs\n", s)
				close(kill)
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// killSignal returns the channel closed by a second signal, or nil.
func killSignal(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(killKey{}).(<-chan struct{})
	return ch
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
