package cli

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/store"
)

// jobRef is the JOB argument of a command that acts on one job: an id
// or its start, and where to look for a job this store has no record of
// (job.Manager.Find).
type jobRef struct {
	host connect.Selection
	id   string
	// act, for a command that acts on the job (cancel, exec), names the
	// command and its --force: another user's job is refused before it is
	// recorded in this store (job.FindToAct).
	act *actOn
	// parts, when set, is what the command does with a split sweep
	// whose parts are not gathered yet (job.PartsError); without, the
	// command says so.
	parts func(ctx context.Context, m *job.Manager, pe *job.PartsError) error
}

type actOn struct {
	command string
	force   *bool
}

// read reads the one JOB argument, and settles where else to look for it.
func (r *jobRef) read(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("%s takes one job id (or the start of one), got %d arguments", c.Command.Name, c.NArg())
	}
	r.id = c.Args().First()
	r.host.MoveContextToKube()
	return nil
}

// forOneJob completes cmd, a command that acts on the one job its JOB
// argument names: the host flags come first among its flags, completion
// offers the store's job ids, and act runs with the job found. check,
// when set, checks the command's own options first, before any I/O.
func forOneJob(a *App, ref *jobRef, cmd *cli.Command, check func() error, act func(ctx context.Context, m *job.Manager, j *store.Job) error) *cli.Command {
	cmd.ArgsUsage = "JOB"
	cmd.Flags = append(hostFlags(&ref.host), cmd.Flags...)
	cmd.BashComplete = completeJobs(a)
	cmd.Action = func(c *cli.Context) error {
		if err := ref.read(c); err != nil {
			return err
		}
		if check != nil {
			if err := check(); err != nil {
				return err
			}
		}
		m, err := a.Jobs()
		if err != nil {
			return err
		}
		var j *store.Job
		if ref.act != nil {
			j, err = m.FindToAct(c.Context, ref.id, ref.host, *ref.act.force, ref.act.command)
		} else {
			j, err = m.Find(c.Context, ref.id, ref.host)
		}
		var parts *job.PartsError
		if ref.parts != nil && errors.As(err, &parts) {
			return ref.parts(c.Context, m, parts)
		}
		if err != nil {
			return err
		}
		return act(c.Context, m, j)
	}
	return cmd
}
