//go:build unix && !linux

package harness

import (
	"os/exec"
	"syscall"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// setProcAttr puts the worker in its own process group, so a timeout kills
// its children too and a terminal's Ctrl-C reaches only the runner.
func setProcAttr(cmd *exec.Cmd, as *sandbox.User) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
