//go:build unix

package cmd

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize sends to ch when the terminal is resized (SIGWINCH), until
// the returned stop is called.
func notifyResize(ch chan<- struct{}) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
				select {
				case ch <- struct{}{}:
				default: // a redraw is already due
				}
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}
