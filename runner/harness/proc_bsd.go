//go:build unix && !linux

package harness

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the worker in its own process group, so a timeout kills
// its children too and a terminal's Ctrl-C reaches only the runner.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
