package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/nightly"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/site"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

type reportOptions struct {
	html   string
	json   bool
	site   site.Options
	server string
}

func newReportCommand(a *App) *cli.Command {
	o := reportOptions{site: site.Options{Rule: nightly.DefaultRule()}}
	return &cli.Command{
		Name:      "report",
		Usage:     "write the results history as a static web site: the experiments' latest verdicts, each series' trend, each job's page",
		ArgsUsage: "--html DIR [EXPERIMENT...]",
		Description: `Writes the results history (every finished job of the store joins it first)
as plain HTML and CSS into DIR, to publish as it is (a CI artifact, GitHub
Pages, any web server) or open from the disk: the pages load nothing from
elsewhere and link each other by relative paths.

  index.html        each experiment's latest run on each kind of machine and
                    host, with the regression rule's verdict on each timing
                    (as xrun regress gives it) and links to the rest
  series/ID.html    one series (an implementation at a case on a kind of
                    machine): its trend figure (PNG, and SVG behind it) and
                    each night's verdict as the rule gave it that night,
                    with what the next run made of a suspect; every series
                    of an experiment of up to 25, else the 25 whose latest
                    verdict is worst (regressed, errored, suspect, improved)
  series/all-H.html an experiment of more series: each one's latest timing
                    and verdict, linked to its page where it has one
  jobs/JOB.html     one run: the verdicts, the criteria, the results table,
                    the warnings, the sweep and roofline figures, and where
                    it ran (GPU, driver, CUDA, Python and library versions,
                    host, git commit, image): the run's shareable page

The history keeps no verdicts: each night's is the rule's reading of that
run against the runs before it (docs/regressions.md, "The dashboard").
DIR is made as needed; a site written there before is replaced, and a
directory that holds anything else is refused. The same history gives
the same files. Progress goes to stderr. Ctrl-C stops it and leaves DIR
as it was. --server URL writes the site of an xrun serve's history (read
token in XRUN_SERVER_TOKEN), which the server builds: the same files as a
local report of the same runs.

Examples:
  xrun report --html site/ && xdg-open site/index.html
  xrun report --html site/ gla-pingpong 058-fused-chain
  xrun report --html out/site --json | jq -r '.pages[].path'
  xrun history import nightly-artifact/ && xrun report --html site/
  XRUN_SERVER_TOKEN=... xrun report --server https://xrun.lab.example --html site/`,
		Flags: []cli.Flag{
			historyFlag(a),
			serverFlag(&o.server),
			&cli.StringFlag{Name: "html", Usage: "write the site into `DIR`", Destination: &o.html},
			&cli.BoolFlag{Name: "json", Usage: "print the pages written as JSON (the directory, and each page's path, kind and title)", Destination: &o.json},
			&cli.IntFlag{Name: "window", Value: o.site.Rule.Window, Usage: "accepted runs the baseline holds (N)", Destination: &o.site.Rule.Window},
			&cli.IntFlag{Name: "min-history", Value: o.site.Rule.MinHistory, Usage: "fewest runs a judgement needs", Destination: &o.site.Rule.MinHistory},
			&cli.Float64Flag{Name: "score", Value: o.site.Rule.Score, Usage: "robust z-score a suspect exceeds", Destination: &o.site.Rule.Score},
			&cli.Float64Flag{Name: "floor", Value: o.site.Rule.Floor, Usage: "relative change a suspect exceeds as well (0.05: 5 %)", Destination: &o.site.Rule.Floor},
		},
		Action: func(c *cli.Context) error {
			if o.html == "" {
				return usageError("report writes a web site: give --html DIR")
			}
			ru := o.site.Rule
			if ru.Window < 1 || ru.MinHistory < 1 || ru.MinHistory > ru.Window || ru.Score < 0 || ru.Floor < 0 {
				return usageError("the rule needs 1 <= --min-history <= --window, --score >= 0 and --floor >= 0")
			}
			o.site.Dir = o.html
			o.site.Experiments = c.Args().Slice()
			o.site.Context = c.Context
			return runReport(a, o)
		},
	}
}

// reportMemoryLimit is the soft memory limit report sets for itself
// (GOMEMLIMIT overrides it).
const reportMemoryLimit = 384 << 20

func runReport(a *App, o reportOptions) error {
	rd, err := a.reader(o.server)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// A run's results.json of 50000 timings decodes into a few
		// hundred MB that are garbage once its page is written: a soft
		// limit makes the collector return them before the next
		// (docs/performance.md, "The HTML report at 50,000 series").
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(reportMemoryLimit))
	}
	pages, err := rd.site(o.site.Context, o.site)
	var ee *contract.ExitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, site.ErrEmpty) && len(o.site.Experiments) > 0:
		return usageError("the results history has no run of %v; xrun history lists what it has", o.site.Experiments)
	case errors.Is(err, site.ErrEmpty):
		return usageError("the results history is empty: submit a job, or xrun history import PATH")
	case errors.Is(err, site.ErrNotSite):
		return usageError("%v", err)
	case errors.Is(err, context.Canceled):
		return &contract.ExitError{Code: contract.ExitCancelled, Err: fmt.Errorf("interrupted: %s is as it was before", o.html)}
	case err != nil:
		return &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	if o.json {
		return render.JSON(a.Out, struct {
			Dir   string      `json:"dir"`
			Pages []site.Page `json:"pages"`
		}{o.html, pages})
	}
	fmt.Fprintf(a.Out, "wrote %d pages to %s: open %s\n", len(pages), o.html, filepath.Join(o.html, "index.html"))
	return nil
}

// historyRunResults is a run's results.json, without its cases where
// they are not wanted (result.ReadHead): the job store's copy, else the
// file it was imported from (nil when neither can be read). A store copy
// that no longer matches the digest its job's record kept is left out,
// and said so to warn once.
func historyRunResults(st *store.Store, r history.Run, cases bool, warn func(error)) *result.Results {
	decode := result.Decode
	if !cases {
		decode = func(data []byte) (*result.Results, error) { return result.ReadHead(bytes.NewReader(data)) }
	}
	if st.Has(r.JobID, store.ResultsFile) {
		j, err := st.Load(r.JobID)
		var data []byte
		if err == nil {
			data, err = st.ReadResults(j)
		}
		var te *store.TamperedError
		if errors.As(err, &te) {
			warn(te)
			return nil
		}
		if err == nil {
			if res, err := decode(data); err == nil {
				return res
			}
		}
	}
	if r.Source != "" && r.Source != history.SourceStore {
		read := result.ReadFile
		if !cases {
			read = result.ReadHeadFile
		}
		if res, err := read(r.Source); err == nil {
			return res
		}
	}
	return nil
}
