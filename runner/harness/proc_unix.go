//go:build unix

package harness

import (
	"fmt"
	"os"
	"syscall"
)

// killTree kills the worker's process group (the worker is its leader):
// the harness and whatever it started (compilers, a command benchmark's
// children).
func killTree(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// oomKilled reports an end that looks like the out-of-memory killer's:
// SIGKILL that the runner did not send, or exit status 137 from a wrapper.
func oomKilled(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok {
		return false
	}
	return (ws.Signaled() && ws.Signal() == syscall.SIGKILL) || (ws.Exited() && ws.ExitStatus() == 137)
}

func exitDescription(st *os.ProcessState) string {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return fmt.Sprintf("signal %d, %v", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit status %d", st.ExitCode())
}
