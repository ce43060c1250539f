package cli

import (
	"context"

	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/jobs"
)

// foundOnHost ends the help of the commands that take a job through
// findJob.
const foundOnHost = `

A job this store has no record of (submitted from another machine or with
another XDG_DATA_HOME; xrun ps lists it from its container) is looked for on
--host (default: DOCKER_HOST, then the docker context) and recorded in this
store.`

// findJob resolves ref, a job id or the start of one, in the job store
// and, failing that, on the host sel picks, where a job found is adopted
// (job.Manager.Find).
func (a *App) findJob(ctx context.Context, ref string, sel backends.Selection) (*jobs.Job, error) {
	m, err := a.Jobs()
	if err != nil {
		return nil, err
	}
	return m.Find(ctx, ref, sel)
}
