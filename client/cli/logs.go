package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/jobs"
	"github.com/xrun-dev/xrun/client/render"
)

type logsOptions struct {
	// host is where to look for a job this store has no record of (findJob).
	host       backends.Selection
	job        string
	follow     bool
	tail       string
	timestamps bool
}

func newLogsCommand(a *App) *cli.Command {
	var o logsOptions
	return &cli.Command{
		Name:      "logs",
		Usage:     "print a job's logs (from its container, or from the job store once it is gone)",
		ArgsUsage: "JOB",
		Description: `With -f the runner's progress lines (case i of N, the implementation being
timed, elapsed time, an estimate of the rest once a case has finished) are a
status line below the log on a terminal, and plain lines elsewhere; without -f
the log is printed as stored (docs/architecture.md, "The runner's log").

Examples:
  xrun logs 3fa1c2
  xrun logs -f --tail 50 3fa1      # follow until the job ends` + foundOnHost,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing until the job ends", Destination: &o.follow},
			&cli.StringFlag{Name: "tail", Aliases: []string{"n"}, Value: "all", Usage: "print only the last N lines", Destination: &o.tail},
			&cli.BoolFlag{Name: "timestamps", Aliases: []string{"t"}, Usage: "prefix each line with its time", Destination: &o.timestamps},
		),
		BashComplete: completeJobs(a),
		Action: func(c *cli.Context) error {
			if err := oneJob(c, &o.job, &o.host); err != nil {
				return err
			}
			return runLogs(c.Context, a, o)
		},
	}
}

func runLogs(ctx context.Context, a *App, o logsOptions) error {
	if o.tail != "all" {
		if n, err := strconv.Atoi(o.tail); err != nil || n < 0 {
			return usageError("--tail %q: give a number of lines or all", o.tail)
		}
	}
	j, err := a.findJob(ctx, o.job, o.host)
	if err != nil {
		return err
	}
	st, err := a.Store()
	if err != nil {
		return err
	}
	b, err := a.Backends().For(ctx, j)
	if err == nil {
		// Both of the container's streams go to stdout, as the store's copy
		// does once the container is gone: the runner logs on stderr, and
		// xrun logs ID | grep must see it either way.
		out := io.Writer(a.Out)
		if o.follow {
			// Followed, the runner's progress lines become a status line
			// on a terminal and plain lines elsewhere (render).
			view := render.NewLog(render.NewStatus(a.Out, a.OutTTY))
			defer view.Close()
			out = view
		}
		err = b.Logs(ctx, j, backend.LogOptions{Follow: o.follow, Tail: o.tail, Timestamps: o.timestamps}, out, out)
		if ctx.Err() != nil && o.follow {
			// Ctrl-C stops the following, not the job: it says so, and
			// exits as an interrupted xrun does (130).
			return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("stopped following; job %s goes on (xrun logs -f %s to follow it again)", j.ID, j.ID)}
		}
		if err == nil || ctx.Err() != nil {
			return nil
		}
	}
	// The container (or its host) is gone: the copy in the store is all there is.
	data, rerr := os.ReadFile(filepath.Join(st.Dir(j.ID), jobs.LogsFile))
	if rerr != nil {
		if errors.Is(err, backend.ErrNotFound) {
			return fmt.Errorf("job %s: its container is gone and no logs were saved before it was removed", j.ID)
		}
		return err
	}
	_, err = a.Out.Write(tailLines(data, o.tail))
	return err
}

// tailLines returns the last n lines of data ("all": everything).
func tailLines(data []byte, tail string) []byte {
	n, err := strconv.Atoi(tail)
	if err != nil {
		return data
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if n < len(lines) {
		lines = lines[len(lines)-n:]
	}
	var out bytes.Buffer
	for _, l := range lines {
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
