package harness

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the worker in its own process group (so a timeout kills
// its children too and a terminal's Ctrl-C reaches only the runner) and has
// the kernel kill it if the runner dies.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
