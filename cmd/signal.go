package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/term"
)

// killKey carries the channel closed on a second signal.
type killKey struct{}

// noticeKey carries the *stopNotice a command sets to word its own stop.
type noticeKey struct{}

// stopNotice is what the first signal prints; run's wording unless a
// command (history) sets its own. A command that stops at the first signal
// has no second step: later signals only repeat that it is stopping.
type stopNotice struct {
	mu     sync.Mutex
	first  string
	second string
}

func (n *stopNotice) get() (first, second string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.first, n.second
}

// setStopNotice words what the signals print for the running command
// ("": nothing, the command says it).
func setStopNotice(ctx context.Context, first, second string) {
	if n, ok := ctx.Value(noticeKey{}).(*stopNotice); ok {
		n.mu.Lock()
		n.first, n.second = first, second
		n.mu.Unlock()
	}
}

// signalContext returns a context cancelled by the first SIGINT or SIGTERM (a
// graceful stop) and a channel, reachable through killSignal, closed by the
// second (stop everything now).
func signalContext(parent context.Context, errOut io.Writer) (context.Context, func()) {
	kill := make(chan struct{})
	notice := &stopNotice{first: "stopping jobs gracefully (again to kill them now)", second: "killing all jobs"}
	parent = context.WithValue(parent, noticeKey{}, notice)
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
				first, second := notice.get()
				if n == 1 {
					say(errOut, s, first)
					cancel()
					continue
				}
				say(errOut, s, second)
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

// say prints a signal's notice; an empty one is the command's to tell
// (pneuma status --watch words its stop once its view is erased).
func say(errOut io.Writer, s os.Signal, notice string) {
	if notice != "" {
		fmt.Fprintf(errOut, "\npneuma: %v: %s\n", s, notice)
	}
}

// killSignal returns the channel closed by a second signal, or nil.
func killSignal(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(killKey{}).(<-chan struct{})
	return ch
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
