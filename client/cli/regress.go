package cli

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/job"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

type regressOptions struct {
	nightly.RegressOptions
	confirm bool
	env     []string
	server  string
}

func newRegressCommand(a *App) *cli.Command {
	o := regressOptions{RegressOptions: nightly.RegressOptions{Rule: nightly.DefaultRule()}}
	return &cli.Command{
		Name:      "regress",
		Usage:     "judge runs against their history: regressed, improved, suspect, stable, insufficient, noisy or errored, per timing",
		ArgsUsage: "[JOB|RESULTS...]",
		Description: `Each timing of a run (a job of the store, or a results.json, which joins the
history) is judged against the last --window accepted runs of its series
(docs/regressions.md):

  insufficient  fewer than --min-history runs before it: never an alert
  noisy         it did not converge, the GPU was throttled or the host was
                busy (host_busy): never an alert
  errored       the implementation did not run, or ran wrong
  suspect       more than --score robust standard deviations (1.4826 MAD)
                and more than --floor from the baseline's median, slower
                or faster: it waits for confirmation
  regressed     a suspect that the next run of the series confirmed (a
  improved      rerun at once with --confirm, or the next night)
  stable        otherwise

Without arguments, the latest run of each experiment on each kind of
machine. The report counts each status against the number of timings,
lists the timings that are not stable (--all: every one) with the
Mann-Whitney p-value of their kept samples against the last accepted run's
(supporting evidence only), and says how the run came out against the
outcome its experiment declares (criteria with expect: fail).

--confirm reruns a run that has suspects at once, with the options it was
submitted with (its directory, host, the same GPUs, base, labels, and the
--env names, whose values come from this shell; --env adds more), waiting
for busy GPUs, and judges the suspects by the rerun: confirmed, or a
spike. A run from a results.json or a Kubernetes cluster is confirmed by
the next run instead.

Exit codes: 0 no confirmed regression (suspects included); 5 a confirmed
regression (distinct from 1, the criteria failed, and 4, infrastructure,
so that a script can tell them apart); 4 the history, a rerun or the
alert failed; 3 bad arguments.

With a confirmed regression, --alert FILE writes the alert (JSON with a
markdown text; the nightly opens a GitHub issue from it) and --webhook URL
(XRUN_ALERT_WEBHOOK, bearer XRUN_ALERT_TOKEN) posts it.

Examples:
  xrun regress 3fa1
  xrun regress --confirm --markdown 3fa1 >> "$GITHUB_STEP_SUMMARY"
  xrun regress experiments/039-gla-pingpong/results/2026-11-24-h100-xrun-submit
  xrun regress --json | jq '.runs[] | {experiment, counts}'`,
		Flags: []cli.Flag{
			historyFlag(a),
			serverFlag(&o.server),
			&cli.BoolFlag{Name: "confirm", Usage: "rerun a run with suspects at once on the same host and GPUs, and judge them by the rerun", Destination: &o.confirm},
			&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "with --confirm: pass host variable NAME (or NAME=value) to the rerun too"},
			&cli.BoolFlag{Name: "json", Usage: "print the report as JSON", Destination: &o.JSON},
			&cli.BoolFlag{Name: "markdown", Aliases: []string{"md"}, Usage: "print the report as markdown (a job summary)", Destination: &o.Markdown},
			&cli.BoolFlag{Name: "all", Usage: "list every timing, stable ones too", Destination: &o.All},
			&cli.StringFlag{Name: "plot", Usage: "draw the trend of each timing that is not stable or insufficient into `DIR` (PNG and SVG); --markdown links them", Destination: &o.Plot},
			&cli.StringFlag{Name: "alert", Usage: "with a confirmed regression, write the alert to `FILE` (JSON)", Destination: &o.Alert},
			&cli.StringFlag{Name: "webhook", EnvVars: []string{"XRUN_ALERT_WEBHOOK"}, Usage: "with a confirmed regression, POST the alert to `URL` (bearer XRUN_ALERT_TOKEN)", Destination: &o.Webhook},
			&cli.IntFlag{Name: "window", Value: o.Rule.Window, Usage: "accepted runs the baseline holds (N)", Destination: &o.Rule.Window},
			&cli.IntFlag{Name: "min-history", Value: o.Rule.MinHistory, Usage: "fewest runs a judgement needs", Destination: &o.Rule.MinHistory},
			&cli.Float64Flag{Name: "score", Value: o.Rule.Score, Usage: "robust z-score a suspect exceeds", Destination: &o.Rule.Score},
			&cli.Float64Flag{Name: "floor", Value: o.Rule.Floor, Usage: "relative change a suspect exceeds as well (0.05: 5 %)", Destination: &o.Rule.Floor},
		},
		Action: func(c *cli.Context) error {
			if o.JSON && o.Markdown {
				return usageError("give --json or --markdown, not both")
			}
			if o.Rule.Window < 1 || o.Rule.MinHistory < 1 || o.Rule.MinHistory > o.Rule.Window || o.Rule.Score < 0 || o.Rule.Floor < 0 {
				return usageError("the rule needs 1 <= --min-history <= --window, --score >= 0 and --floor >= 0")
			}
			o.env = c.StringSlice("env")
			if len(o.env) > 0 && !o.confirm {
				return usageError("--env passes variables to the rerun of --confirm: give --confirm too")
			}
			o.Refs = c.Args().Slice()
			if o.confirm {
				o.Rerun = func(ctx context.Context, j *store.Job) (*store.Job, error) { return a.rerun(ctx, j, o.env) }
				o.NoConfirm = func(j *store.Job) string { return connect.CapabilitiesOf(j).NoConfirm }
			}
			o.WebhookToken = a.getenv("XRUN_ALERT_TOKEN")
			rd, err := a.reader(o.server)
			if err != nil {
				return err
			}
			return rd.regress(c.Context, o.RegressOptions)
		},
	}
}

// rerun submits j again with the request it was submitted with
// (job.RerunArgs), on its host and GPUs, plus env: regress --confirm's
// rerun. Its progress goes to stderr, its table nowhere; its results join
// the history as it ends.
func (a *App) rerun(ctx context.Context, j *store.Job, env []string) (*store.Job, error) {
	m, err := a.Jobs()
	if err != nil {
		return nil, err
	}
	if job.RanLocally(j) {
		if len(env) > 0 {
			return nil, contract.Usagef("--env is for reruns in a container; a local rerun (job %s ran with xrun run --local) has this shell's environment", j.ID)
		}
		return m.RerunLocal(ctx, j)
	}
	args := job.RerunArgs(j, env)
	if args.Post, err = a.configPost(); err != nil {
		return nil, err
	}
	r, err := job.Request(args, a.Getenv, a.Err)
	if err != nil {
		return nil, err
	}
	if err := job.Preflight(ctx, r); err != nil {
		return nil, err
	}
	var rerun *store.Job
	m.OnJob = func(j *store.Job) { rerun = j }
	got, err := m.Submit(ctx, r)
	if rerun == nil {
		rerun = got
	}
	return rerun, err
}
