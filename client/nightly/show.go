package nightly

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/history"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
)

// ShowOptions say what Show prints.
type ShowOptions struct {
	Filter history.Filter
	Rule   regress.Rule
	// JSON and CSV pick the form (neither: the table).
	JSON, CSV bool
	// Plot is a directory for each series' trend figure ("": none).
	Plot string
	// Last is how many of each series' latest runs the table shows (0:
	// all); the verdicts read every run all the same, and --json and
	// --csv print them all.
	Last int
}

// Show prints the series of the history that o.Filter picks, each run
// with the rule's verdict. It reads the history a group of series at a
// time and prints each as it is judged, so that a large history (10^6
// points) is never held whole.
func (n *History) Show(o ShowOptions) error {
	// Buffered: the table is written a line at a time, and a write per
	// line was a fifth of printing 110000 rows.
	out := bufio.NewWriterSize(n.Out, 64<<10)
	err := n.show(out, o)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write history: %w", ferr)
	}
	return err
}

func (n *History) show(out io.Writer, o ShowOptions) error {
	var csvw *flat.CSV
	firstJSON, firstText := true, true
	start := func(points int, params []string) error {
		if points == 0 {
			return contract.Usagef("the results history has no run that matches (%s); xrun history import PATH adds results.json files", describeFilter(o.Filter))
		}
		switch {
		case o.JSON:
		case o.CSV:
			var err error
			csvw, err = flat.NewCSV(out, params)
			return err
		}
		return nil
	}
	// The verdicts need each series whole: the filters pick series and
	// runs, and the rule reads all of a picked series' runs (before
	// --since too) with the other series of its group.
	var changes map[int64][]history.ChangePoint
	if o.Plot != "" {
		var err error
		if changes, err = n.h.ChangePoints(); err != nil {
			return infra(err)
		}
	}
	// The table shows each series' last runs: it is judged from the
	// rules' state kept before them (history.WalkFilter). The figures,
	// --json and --csv read every run.
	last := o.Last
	if o.JSON || o.CSV || o.Plot != "" {
		last = 0
	}
	err := n.h.WalkFilter(context.Background(), o.Filter, o.Rule, last, start, func(whole, shown []history.Judged, earlier map[int64]int) error {
		if o.Plot != "" {
			for _, ser := range history.JudgedSeries(whole) {
				if _, err := n.plotSeries(ser, o.Plot, o.Rule, changes); err != nil {
					return err
				}
			}
		}
		switch {
		case o.JSON:
			for _, s := range historyJSON(shown) {
				data, err := json.MarshalIndent(s, "  ", "  ")
				if err != nil {
					return fmt.Errorf("write JSON: %w", err)
				}
				sep := ",\n  "
				if firstJSON {
					sep, firstJSON = "[\n  ", false
				}
				if _, err := fmt.Fprintf(out, "%s%s", sep, data); err != nil {
					return fmt.Errorf("write JSON: %w", err)
				}
			}
			return nil
		case o.CSV:
			for _, j := range shown {
				row := j.Row
				row.Regress = StatusText(Point{Verdict: j.Verdict})
				row.SeriesID = j.SeriesID
				if err := csvw.Write(row); err != nil {
					return err
				}
			}
			return nil
		}
		for _, ser := range history.JudgedSeries(shown) {
			if !firstText {
				fmt.Fprintln(out)
			}
			firstText = false
			// A series' lines are aligned among themselves: writing each
			// out keeps the output as it was, without holding all of it.
			if err := textSeries(out, ser, earlier[ser[0].SeriesID]); err != nil {
				return fmt.Errorf("write history: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		var ee *contract.ExitError
		if errors.As(err, &ee) {
			return err
		}
		return infra(err)
	}
	switch {
	case o.JSON:
		end := "\n]\n"
		if firstJSON {
			end = "[]\n"
		}
		if _, err := io.WriteString(out, end); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	case o.CSV:
		return csvw.Flush()
	}
	return nil
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

// textSeries prints one series: a heading, then a table of a line per run.
func textSeries(w io.Writer, ser []history.Judged, earlier int) error {
	k := ser[0].Key
	fmt.Fprintf(w, "series %d: %s · %s · %s\n  on %s\n", ser[0].SeriesID, k.Experiment, k.Implementation, k.Case, k.Machine())
	if a := neverJudged(ser); a != "" {
		fmt.Fprintf(w, "  %s\n", a)
	}
	if earlier > 0 {
		fmt.Fprintf(w, "  (%d earlier runs left out: --last 0 shows them, --csv and --json have them all)\n", earlier)
	}
	t := &table.Table{Columns: table.Heads("DATE", "JOB", "HOST", "MEDIAN ms", "Q1-Q3 ms", "BASELINE ms (n)", "CHANGE", "JUDGED ON", "STATUS")}
	for _, j := range ser {
		ms, q := "-", "-"
		if j.MedianMS > 0 {
			ms = table.FixedMS(j.MedianMS)
			q = table.FixedMS(j.Q1MS) + "-" + table.FixedMS(j.Q3MS)
		}
		base, change := "-", "-"
		if v := j.Verdict; v.Median > 0 {
			base, change = fmt.Sprintf("%s (%d)", table.FixedMS(v.Median), v.Baseline), table.Change(v.Change)
		}
		host := j.Host
		if host == "" {
			host = j.Address
		}
		t.Add(table.Fig(j.Date.Format("2006-01-02 15:04")), table.Code(j.JobID), table.Text(table.OrDash(host)), table.Fig(ms), table.Fig(q),
			table.Fig(base), table.Fig(change), table.Fig(JudgedOn(j.Verdict)), table.Fig(StatusText(Point{Verdict: j.Verdict})))
	}
	return t.WriteText(w, "  ")
}

// neverJudged says, for a series none of whose runs was judged, that it
// has no baseline and why ("" for one that was).
func neverJudged(ser []history.Judged) string {
	return NeverJudgedAdvice(ser[len(ser)-1].Verdict)
}

// seriesJSON is one series in xrun history --json.
type seriesJSON struct {
	ID     int64       `json:"series"`
	Key    history.Key `json:"key"`
	Points []pointJSON `json:"points"`
	// NeverConverged: no run of the series converged; NeverJudged: no run
	// of it was clean, for any reason. Either way it has no baseline, and
	// Advice says why and what to change.
	NeverConverged bool   `json:"never_converged,omitempty"`
	NeverJudged    bool   `json:"never_judged,omitempty"`
	Advice         string `json:"advice,omitempty"`
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
	for _, ser := range history.JudgedSeries(judged) {
		last := ser[len(ser)-1].Verdict
		s := seriesJSON{ID: ser[0].SeriesID, Key: ser[0].Key, NeverConverged: last.NeverConverged, NeverJudged: last.NeverJudged,
			Advice: NeverJudgedAdvice(last)}
		for _, j := range ser {
			s.Points = append(s.Points, pointJSON{Date: j.Date, JobID: j.JobID, Host: j.Host, Address: j.Address, GPUUUID: j.GPUUUID,
				Status: j.ImplStatus, MedianMS: j.MedianMS, Q1MS: j.Q1MS, Q3MS: j.Q3MS, Clock: j.Clock, Commit: j.Commit,
				Source: j.Source, Verdict: j.Verdict})
		}
		out = append(out, s)
	}
	return out
}

// plotSeries draws one judged series' trend into dir and says so on
// stderr. changes are the history's change points (ChangePoints), read
// before: a walk of the history holds its one connection while it calls
// back, so a read here would wait for it forever.
func (n *History) plotSeries(ser []history.Judged, dir string, rule regress.Rule, changes map[int64][]history.ChangePoint) (plot.Figure, error) {
	k := ser[0].Key
	t := plot.Trend{Title: fmt.Sprintf("%s · %s · %s", k.Experiment, k.Implementation, k.Case), Machine: k.Machine(), Rule: rule}
	values := history.Values(history.PointsOf(ser), changes[ser[0].SeriesID])
	for i, j := range ser {
		t.Points = append(t.Points, plot.TrendPoint{Run: j.JobID, At: j.Date, MedianMS: j.MedianMS, Q1MS: j.Q1MS, Q3MS: j.Q3MS,
			Verdict: j.Verdict, ChangePoint: values[i].ChangePoint})
	}
	name := fmt.Sprintf("trend-%d-%s-%s", ser[0].SeriesID, k.Implementation, k.Case)
	f, err := plot.TrendFigure(t, dir, plot.FileName(name))
	if err != nil {
		return f, err
	}
	fmt.Fprintf(n.Err, "wrote %s and %s\n", f.PNG, f.SVG)
	return f, nil
}
