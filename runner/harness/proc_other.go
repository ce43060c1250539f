//go:build !unix

package harness

import (
	"fmt"
	"os"
	"os/exec"
)

func setProcAttr(cmd *exec.Cmd) {}

func killTree(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func oomKilled(st *os.ProcessState) bool { return false }

func exitDescription(st *os.ProcessState) string {
	return fmt.Sprintf("exit status %d", st.ExitCode())
}
