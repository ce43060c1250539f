package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/client/regress/summary"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/runner/numfmt"
)

type historyOptions struct {
	filter history.Filter
	cases  []string
	since  string
	json   bool
	csv    bool
	plot   string
	rule   regress.Rule
}

func newHistoryCommand(a *App) *cli.Command {
	o := historyOptions{rule: regress.Default()}
	return &cli.Command{
		Name:      "history",
		Usage:     "list the results history: each series (one implementation at one case on one kind of machine) over time, with the regression rule's verdicts",
		ArgsUsage: "[EXPERIMENT]",
		Description: `Every finished job's results join the history (an SQLite file beside the job
store, $XDG_DATA_HOME/xrun/history.db; --history or XRUN_HISTORY for another),
and so does any results.json given to xrun history import. A series is one
implementation at one case of one experiment on one kind of machine: the GPU
model, the driver's and CUDA's major versions, the base's Python, PyTorch,
Triton and NumPy versions, and the clock policy (the highest SM clock allowed
and the power limit). The host and the GPU's UUID are kept with each run and
can be filtered on (--host, --gpu).

Each run of a series gets the regression rule's verdict (docs/regressions.md):
stable, suspect, regressed, improved, insufficient, noisy or errored. --plot
draws each series' trend with the rule's band (trend-*.png and .svg).

Examples:
  xrun history gla-pingpong --impl pipelined --case T=1024 --case chunk=256
  xrun history --host gpu1 --since 30d --csv > nightly.csv
  xrun history gla-pingpong --plot figures/
  xrun history import experiments/039-gla-pingpong/results
  xrun history accept 3fa1 --note "new tiling, 3 % slower, accepted"`,
		Flags: []cli.Flag{
			historyFlag(a),
			&cli.StringFlag{Name: "impl", Usage: "only the series of this implementation", Destination: &o.filter.Implementation},
			&cli.StringSliceFlag{Name: "case", Usage: "only cases with parameter `K=V` (repeat for several)"},
			&cli.StringFlag{Name: "host", Usage: "only runs on this host (a part of its name or address)", Destination: &o.filter.Host},
			&cli.StringFlag{Name: "gpu", Usage: "only runs on this GPU (a part of its model or UUID)", Destination: &o.filter.GPU},
			&cli.StringFlag{Name: "since", Usage: "only runs since a date (2026-11-01) or for a time (30d, 12h)", Destination: &o.since},
			&cli.BoolFlag{Name: "json", Usage: "print the series as JSON", Destination: &o.json},
			&cli.BoolFlag{Name: "csv", Usage: "print one row per run, implementation and case (pandas, W&B, MLflow read it as it is)", Destination: &o.csv},
			&cli.StringFlag{Name: "plot", Usage: "write each series' trend to `DIR` (PNG and SVG)", Destination: &o.plot},
		},
		Subcommands: []*cli.Command{
			newHistoryImportCommand(a),
			newHistoryAcceptCommand(a),
			newHistoryBackupCommand(a),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("history takes at most one experiment name, got %d arguments", c.NArg())
			}
			if o.json && o.csv {
				return usageError("give --json or --csv, not both")
			}
			o.filter.Experiment = c.Args().First()
			o.cases = c.StringSlice("case")
			return runHistory(c.Context, a, o)
		},
	}
}

// parseCases reads --case K=V flags.
func parseCases(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return nil, usageError("--case %q: give PARAM=VALUE, e.g. --case T=1024", f)
		}
		out[k] = v
	}
	return out, nil
}

// parseSince reads a date (2006-01-02, RFC 3339) or an age (30d, 12h).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageError("--since %q: give a date (2026-11-01) or an age (30d, 12h)", s)
}

func runHistory(ctx context.Context, a *App, o historyOptions) error {
	var err error
	if o.filter.Case, err = parseCases(o.cases); err != nil {
		return err
	}
	if o.filter.Since, err = parseSince(o.since, time.Now()); err != nil {
		return err
	}
	h, err := a.syncedHistory()
	if err != nil {
		return err
	}
	points, err := h.Points(o.filter)
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	if len(points) == 0 {
		return usageError("the results history has no run that matches (%s); xrun history import PATH adds results.json files", describeFilter(o.filter))
	}
	// The verdicts need each series whole: the filters pick series, and
	// the rule reads all of their runs (before --since too).
	full, err := h.Points(history.Filter{Series: seriesIDs(points)})
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	judged, err := h.Walk(full, o.rule)
	if err != nil {
		return &ExitError{Code: ExitInfra, Err: err}
	}
	keep := map[[2]int64]bool{}
	for _, p := range points {
		keep[[2]int64{p.SeriesID, p.RunID}] = true
	}
	var shown []history.Judged
	for _, j := range judged {
		if keep[[2]int64{j.SeriesID, j.RunID}] {
			shown = append(shown, j)
		}
	}
	if o.plot != "" {
		if err := plotTrends(a, h, judged, o); err != nil {
			return err
		}
	}
	switch {
	case o.json:
		return render.JSON(a.Out, historyJSON(shown))
	case o.csv:
		rows := make([]flat.Row, len(shown))
		for i, j := range shown {
			rows[i] = j.Row
			rows[i].Regress = summary.StatusText(summary.Point{Verdict: j.Verdict})
		}
		return flat.WriteCSV(a.Out, rows)
	}
	return historyText(a, shown)
}

func seriesIDs(points []history.Point) []int64 {
	var ids []int64
	for _, s := range history.Series(points) {
		ids = append(ids, s[0].SeriesID)
	}
	return ids
}

func describeFilter(f history.Filter) string {
	var parts []string
	if f.Experiment != "" {
		parts = append(parts, "experiment "+f.Experiment)
	}
	if f.Implementation != "" {
		parts = append(parts, "--impl "+f.Implementation)
	}
	for k, v := range f.Case {
		parts = append(parts, "--case "+k+"="+v)
	}
	if f.Host != "" {
		parts = append(parts, "--host "+f.Host)
	}
	if f.GPU != "" {
		parts = append(parts, "--gpu "+f.GPU)
	}
	if !f.Since.IsZero() {
		parts = append(parts, "since "+f.Since.UTC().Format(time.RFC3339))
	}
	if len(parts) == 0 {
		return "it is empty"
	}
	return strings.Join(parts, ", ")
}

// machine describes a series' kind of machine.
func machine(k history.Key) string {
	parts := []string{k.GPU}
	if k.Driver != "" {
		parts = append(parts, "driver "+k.Driver)
	}
	if k.CUDA != "" {
		parts = append(parts, "CUDA "+k.CUDA)
	}
	if k.Stack != "" {
		parts = append(parts, k.Stack)
	}
	if k.ClockPolicy != "" {
		parts = append(parts, k.ClockPolicy)
	}
	return strings.Join(parts, ", ")
}

// historyText prints each series: a heading, then one line per run.
func historyText(a *App, judged []history.Judged) error {
	tw := tabwriter.NewWriter(a.Out, 0, 0, 2, ' ', 0)
	for i, ser := range judgedSeries(judged) {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		k := ser[0].Key
		fmt.Fprintf(tw, "series %d: %s · %s · %s\n  on %s\n", ser[0].SeriesID, k.Experiment, k.Implementation, k.Case, machine(k))
		fmt.Fprintln(tw, "  DATE\tJOB\tHOST\tMEDIAN ms\tQ1-Q3 ms\tBASELINE ms (n)\tCHANGE\tSTATUS")
		for _, j := range ser {
			ms, q := "-", "-"
			if j.MedianMS > 0 {
				ms = numfmt.FixedMS(j.MedianMS)
				q = numfmt.FixedMS(j.Q1MS) + "-" + numfmt.FixedMS(j.Q3MS)
			}
			base, change := "-", "-"
			if v := j.Verdict; v.Median > 0 {
				base, change = fmt.Sprintf("%s (%d)", numfmt.FixedMS(v.Median), v.Baseline), fmt.Sprintf("%+.1f%%", 100*v.Change)
			}
			host := j.Host
			if host == "" {
				host = j.Address
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Date.Format("2006-01-02 15:04"), j.JobID, dashed(host), ms, q,
				base, change, summary.StatusText(summary.Point{Verdict: j.Verdict}))
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

func judgedSeries(judged []history.Judged) [][]history.Judged {
	var out [][]history.Judged
	for i := 0; i < len(judged); {
		j := i
		for j < len(judged) && judged[j].SeriesID == judged[i].SeriesID {
			j++
		}
		out = append(out, judged[i:j])
		i = j
	}
	return out
}

// seriesJSON is one series in xrun history --json.
type seriesJSON struct {
	ID     int64       `json:"series"`
	Key    history.Key `json:"key"`
	Points []pointJSON `json:"points"`
}

type pointJSON struct {
	Date     time.Time       `json:"date"`
	JobID    string          `json:"job_id"`
	Host     string          `json:"host,omitempty"`
	Address  string          `json:"address,omitempty"`
	GPUUUID  string          `json:"gpu_uuid,omitempty"`
	Status   string          `json:"impl_status"`
	MedianMS float64         `json:"median_ms,omitempty"`
	Q1MS     float64         `json:"q1_ms,omitempty"`
	Q3MS     float64         `json:"q3_ms,omitempty"`
	Clock    string          `json:"clock,omitempty"`
	Commit   string          `json:"commit,omitempty"`
	Source   string          `json:"source"`
	Verdict  regress.Verdict `json:"verdict"`
}

func historyJSON(judged []history.Judged) []seriesJSON {
	out := []seriesJSON{}
	for _, ser := range judgedSeries(judged) {
		s := seriesJSON{ID: ser[0].SeriesID, Key: ser[0].Key}
		for _, j := range ser {
			s.Points = append(s.Points, pointJSON{Date: j.Date, JobID: j.JobID, Host: j.Host, Address: j.Address, GPUUUID: j.GPUUUID,
				Status: j.ImplStatus, MedianMS: j.MedianMS, Q1MS: j.Q1MS, Q3MS: j.Q3MS, Clock: j.Clock, Commit: j.Commit,
				Source: j.Source, Verdict: j.Verdict})
		}
		out = append(out, s)
	}
	return out
}

// plotTrends draws each series' trend into o.plot.
func plotTrends(a *App, h *history.Store, judged []history.Judged, o historyOptions) error {
	for _, ser := range judgedSeries(judged) {
		if _, err := a.plotSeries(h, ser, o.plot, o.rule); err != nil {
			return err
		}
	}
	return nil
}

// plotSeries draws one judged series' trend into dir and says so on
// stderr.
func (a *App) plotSeries(h *history.Store, ser []history.Judged, dir string, rule regress.Rule) (plot.Figure, error) {
	changes, err := h.ChangePoints(ser[0].SeriesID)
	if err != nil {
		return plot.Figure{}, &ExitError{Code: ExitInfra, Err: err}
	}
	k := ser[0].Key
	t := plot.Trend{Title: fmt.Sprintf("%s · %s · %s", k.Experiment, k.Implementation, k.Case), Machine: machine(k), Rule: rule}
	values := history.Values(pointsOf(ser), changes[ser[0].SeriesID])
	for i, j := range ser {
		t.Points = append(t.Points, plot.TrendPoint{Run: j.JobID, At: j.Date, MedianMS: j.MedianMS, Q1MS: j.Q1MS, Q3MS: j.Q3MS,
			Verdict: j.Verdict, ChangePoint: values[i].ChangePoint})
	}
	name := fmt.Sprintf("trend-%d-%s-%s", ser[0].SeriesID, k.Implementation, k.Case)
	f, err := plot.TrendFigure(t, dir, plot.FileName(name))
	if err != nil {
		return f, err
	}
	fmt.Fprintf(a.Err, "wrote %s and %s\n", f.PNG, f.SVG)
	return f, nil
}

func pointsOf(js []history.Judged) []history.Point {
	out := make([]history.Point, len(js))
	for i, j := range js {
		out[i] = j.Point
	}
	return out
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
