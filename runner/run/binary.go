package run

import (
	"context"
	"io"
	"path/filepath"
)

// RunnerName is the name the xrun binary answers to as the in-container
// runner (/usr/local/bin/xrun-runner in every image).
const RunnerName = "xrun-runner"

// RunnerArg as the first argument also selects the runner.
const RunnerArg = "__runner"

// IsRunner reports whether args (os.Args of the xrun binary) ask for the
// in-container runner rather than the CLI: the binary is called
// xrun-runner, or the first argument is __runner.
func IsRunner(args []string) bool {
	if len(args) == 0 {
		return false
	}
	return filepath.Base(args[0]) == RunnerName || len(args) > 1 && args[1] == RunnerArg
}

// RunnerMain is runner/cmd/xrun-runner's command line (Main) inside the
// xrun binary, so one static binary is both client and runner. args are
// os.Args; it returns the runner's exit code.
func RunnerMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = args[1:]
	if len(args) > 0 && args[0] == RunnerArg {
		args = args[1:]
	}
	return Main(ctx, RunnerName, args, stdout, stderr)
}
