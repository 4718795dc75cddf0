// Package proc puts child processes in process groups of their own and
// signals those groups whole.
//
// A child in its own group does not receive the terminal's Ctrl-C (only
// pneuma does, and it then stops its children in order), and a signal to the
// group reaches everything the child started, so nothing a tool spawned
// outlives it. Where process groups do not exist (Windows), NewGroup does
// nothing, Signal only kills and CancelBy keeps os/exec's default.
package proc
