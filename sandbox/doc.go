// Package sandbox confines a job's CLI process tree with bubblewrap: its
// worktree writable, the repository and the system read-only, nothing else
// of $HOME, its own pid, network, ipc and uts namespaces, and a network
// reached only through an HTTP CONNECT proxy that runs in pneuma, outside
// the sandbox, and allows the API endpoint plus the job's own list.
//
// Inside, pneuma's own binary runs first as a forwarder (ForwardCommand): it
// listens on loopback in the sandbox's network namespace, relays to the
// proxy's unix socket bound in from outside, and runs the CLI as its child.
// The rule lives in the proxy; nothing inside the sandbox can change it.
package sandbox
