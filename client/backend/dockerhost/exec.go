package dockerhost

import (
	"context"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

var _ backend.Execer = (*Backend)(nil)

// Exec runs a command in the job's container as the experiment's code
// runs: as contract.JobUser in the experiment's directory, with the
// experiment's HOME and TMPDIR. The container's no-new-privileges holds
// for it, and a user that is not root has none of the runner's
// capabilities, so it can neither read the runner's token nor signal the
// runner. So it runs in a job submitted with --root too, whose code runs
// as root: exec does not give root.
func (b *Backend) Exec(ctx context.Context, j *store.Job, e backend.Exec) (int, error) {
	o := engine.ExecOptions{Cmd: e.Cmd, User: contract.JobUser, WorkingDir: contract.ExperimentDir, TTY: e.TTY,
		Env: []string{"HOME=" + contract.HomeDir, "TMPDIR=" + contract.TmpDir}}
	code, err := b.Engine.Exec(ctx, j.ContainerID, o, e.Stdin, e.Stdout, e.Stderr)
	return code, notFound(err)
}
