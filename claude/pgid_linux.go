package claude

import "syscall"

// groupAttr starts the CLI as the leader of its own process group, so that
// a terminal's Ctrl-C reaches only pneuma (which then stops jobs in order)
// and a stop can signal the CLI with everything its tools started. Pdeathsig
// kills the CLI if pneuma itself dies (even by SIGKILL), so no job outlives
// pneuma; a run resumed with --resume continues its session instead. (The
// kernel sends it when the thread that started the child exits; Go keeps
// its threads for the life of the process.)
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
