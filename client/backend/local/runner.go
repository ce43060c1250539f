package local

import "github.com/xrun-dev/xrun/contract"

// Command is the command line of a local job's runner: the xrun binary
// exe as contract.LocalRunnerArg (runner/run.LocalMain), for the
// experiment in dir writing to out (both absolute), in CPU mode with cpu,
// with python as the harness's interpreter where given.
func (b *Backend) Command(exe, dir, out string, cpu bool, python, jobID string) []string {
	argv := []string{exe, contract.LocalRunnerArg, "--experiment", dir, "--out", out, "--job-id", jobID}
	if cpu {
		argv = append(argv, "--mode", "cpu")
	}
	if python != "" {
		argv = append(argv, "--python", python)
	}
	return argv
}
