//go:build !unix

package cmd

// notifyResize does nothing where there is no SIGWINCH: each frame asks
// the terminal's size anyway.
func notifyResize(chan<- struct{}) (stop func()) { return func() {} }
