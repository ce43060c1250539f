package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/contract"
)

type execOptions struct {
	ref         jobRef
	interactive bool
	tty         bool
	force       bool
}

func newExecCommand(a *App) *cli.Command {
	var o execOptions
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a command in a running job's container, as its experiment's code runs",
		ArgsUsage: "JOB -- COMMAND [ARG...]",
		Description: `Runs COMMAND beside a running job on a Docker host: in its container, as the
user its experiment's code runs as (never the runner's, which can read the
results token and stop the workers), in the experiment's directory, with its
HOME and TMPDIR. xrun exits with COMMAND's exit code.

What COMMAND does shares the job's CPUs and GPUs while the job is timed: a
look (nvidia-smi, ls, a py-spy dump) is fine, a load is in the timings.

Examples:
  xrun exec 3fa1 -- nvidia-smi
  xrun exec 3fa1 -- ls -l /xrun/tmp
  xrun exec -it 3fa1 -- bash                 # a shell in the job's container` + foundOnHost,
		Flags: append(hostFlags(&o.ref.host),
			&cli.BoolFlag{Name: "interactive", Aliases: []string{"i"}, Usage: "pass standard input to the command", Destination: &o.interactive},
			&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "give the command a terminal", Destination: &o.tty},
			&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "run it in another user's job too", Destination: &o.force}),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			if len(args) > 1 && args[1] == "--" {
				args = append(args[:1], args[2:]...)
			}
			if len(args) < 2 {
				return usageError("exec takes a job id and a command: xrun exec JOB -- COMMAND [ARG...]")
			}
			o.ref.id = args[0]
			o.ref.host.MoveContextToKube()
			m, err := a.Jobs()
			if err != nil {
				return err
			}
			j, err := m.FindToAct(c.Context, o.ref.id, o.ref.host, o.force, "exec")
			if err != nil {
				return err
			}
			e := backend.Exec{Cmd: args[1:], Stdout: a.Out, Stderr: a.Err, TTY: o.tty}
			if o.interactive {
				e.Stdin = a.In
				if e.Stdin == nil {
					e.Stdin = os.Stdin
				}
			}
			if o.tty {
				// The terminal's own bytes go through as they are.
				e.Stdout = rawOut(a)
			}
			code, err := m.Exec(c.Context, j, e)
			if err != nil {
				return err
			}
			if code != 0 {
				return &contract.ExitError{Code: code, Err: fmt.Errorf("%s exited with code %d in job %s", args[1], code, j.ID)}
			}
			return nil
		},
	}
}

// rawOut is stdout as it is where it is a terminal (a command given one
// draws on it), else Out.
func rawOut(a *App) io.Writer {
	if a.OutTTY != nil {
		return a.OutTTY
	}
	return a.Out
}
