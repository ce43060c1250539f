//go:build !unix

package harness

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

func setProcAttr(cmd *exec.Cmd, as *sandbox.User) {}

func killTree(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func oomKilled(st *os.ProcessState) bool { return false }

func exitDescription(st *os.ProcessState) string {
	return fmt.Sprintf("exit status %d", st.ExitCode())
}
