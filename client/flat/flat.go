// Package flat turns results.json into flat rows, one per implementation
// and case, and writes them as CSV that pandas, Weights & Biases and MLflow
// read as they are (one header line, one column per parameter). It is the
// one flattening of results: xrun results --csv, xrun history --csv and the
// history's import all use it. Synthetic makes runs as large as a run may
// make them, for scale tests and benchmarks.
package flat

import (
	"encoding/csv"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// Row is one implementation at one case of one run.
type Row struct {
	Experiment string         `json:"experiment"`
	JobID      string         `json:"job_id"`
	Date       time.Time      `json:"date"`
	Status     string         `json:"status"` // the job's
	Mode       string         `json:"mode"`
	Host       string         `json:"host"`
	GPU        string         `json:"gpu"` // the model, "cpu: <model>" on a CPU run
	GPUUUID    string         `json:"gpu_uuid,omitempty"`
	Driver     string         `json:"driver,omitempty"`
	CUDA       string         `json:"cuda,omitempty"`
	Torch      string         `json:"torch,omitempty"`
	Commit     string         `json:"commit,omitempty"`
	Case       string         `json:"case"`
	Params     map[string]any `json:"params"`
	// Implementation and its outcome on the case: ImplStatus is
	// result.ImplOK, ImplWrong, ...; Error says why it did not run.
	Implementation string  `json:"implementation"`
	ImplStatus     string  `json:"impl_status"`
	Error          string  `json:"error,omitempty"`
	MedianMS       float64 `json:"median_ms,omitempty"`
	Q1MS           float64 `json:"q1_ms,omitempty"`
	Q3MS           float64 `json:"q3_ms,omitempty"`
	Clock          string  `json:"clock,omitempty"`
	Samples        int     `json:"samples,omitempty"`
	Converged      bool    `json:"converged"`
	// Throttled says the timing's own throttled warning covers it (a
	// thermal or hardware slowdown, or clocks well under the maximum with
	// no reason given, in its own readings); the GPU's state at the end of
	// the run marks no timing.
	// HostBusy says a host_busy warning covers it (a CPU timing taken
	// while other processes used more of the CPUs than the runner allows).
	Throttled bool `json:"throttled,omitempty"`
	HostBusy  bool `json:"host_busy,omitempty"`
	// What the GPU did while the timing's samples were taken (GPU runs
	// with clock readings): the median SM clock, the GPU's maximum, the
	// median power, the reasons that held clocks back with how many of
	// the readings had each ("sw_power_cap 3/5"), and Slowdown, why the
	// readings saw a thermal or hardware slowdown ("" when they did not).
	SMClockMHz    int     `json:"sm_clock_mhz,omitempty"`
	MaxSMClockMHz int     `json:"max_sm_clock_mhz,omitempty"`
	PowerW        float64 `json:"power_w,omitempty"`
	ClockReadings int     `json:"clock_readings,omitempty"`
	ClockReasons  string  `json:"clock_reasons,omitempty"`
	Slowdown      string  `json:"slowdown,omitempty"`

	TFLOPS       float64 `json:"tflops,omitempty"`
	GBps         float64 `json:"gbps,omitempty"`
	PctPeakFlops float64 `json:"pct_peak_flops,omitempty"`
	PctPeakBW    float64 `json:"pct_peak_bw,omitempty"`
	Intensity    float64 `json:"arithmetic_intensity,omitempty"`
	Bound        string  `json:"bound,omitempty"`
	// Speedup and Verdict are over the run's baseline (empty for the
	// baseline itself and the reference).
	Speedup float64 `json:"speedup,omitempty"`
	Verdict string  `json:"verdict,omitempty"`
	// MaxAbsError and MaxRelError are the implementation's largest
	// errors against the reference at the case (nil: not checked).
	MaxAbsError *float64 `json:"max_abs_error,omitempty"`
	MaxRelError *float64 `json:"max_rel_error,omitempty"`
	// Regress is the regression rule's status of the row in its series
	// and SeriesID that series' id (history rows only).
	Regress  string `json:"regress,omitempty"`
	SeriesID int64  `json:"series_id,omitempty"`
	// Autotune is the config each autotuned kernel ran with
	// (result.AutotuneSummary).
	Autotune string `json:"autotune,omitempty"`

	// Stack and ClockPolicy identify the software and clock settings the
	// run had, for the history's series key (the CSV has Stack: python,
	// torch, triton, numpy); KeptSamples are the timing's kept samples.
	Stack       string    `json:"-"`
	ClockPolicy string    `json:"-"`
	KeptSamples []float64 `json:"-"`
}

// Rows flattens r: for every case, each implementation with a result
// (the reference last), skipped ones left out.
func Rows(r *result.Results) []Row {
	var rows []Row
	for _, c := range r.Cases {
		rows = caseRows(rows, r, c)
	}
	finishRows(r, rows)
	return rows
}

// caseRows appends the rows of case c to rows: the case's and the
// implementations' own fields (implOrder reads r.Implementations, and
// nothing else of r).
func caseRows(rows []Row, r *result.Results, c result.Case) []Row {
	label := analyze.CaseLabel(c)
	for _, name := range implOrder(r, c) {
		ir := c.Results[name]
		if ir == nil || ir.Status == result.ImplSkipped {
			continue
		}
		row := Row{Case: label, Params: c.Params, Implementation: name, ImplStatus: ir.Status, Error: text.OneLine(ir.Error),
			Autotune: result.AutotuneSummary(ir.Autotune)}
		if t := ir.Timing; t != nil && t.MedianMS > 0 {
			row.MedianMS, row.Q1MS, row.Q3MS = t.MedianMS, t.Q1MS, t.Q3MS
			row.Clock, row.Samples, row.Converged = t.Clock, t.Samples, t.Converged // finishRows: the mode's clock when none
			row.KeptSamples = t.KeptSamplesMS
			if c := t.Clocks; c != nil && c.Readings > 0 {
				row.SMClockMHz, row.PowerW, row.ClockReadings = c.SMClockMHz, c.PowerW, c.Readings
				row.MaxSMClockMHz = MaxSMClock(r)
				row.ClockReasons = clockReasons(c)
				if slow, why := analyze.SlowedDown(c); slow {
					row.Slowdown = why
				}
				// Judged again by today's rule, not the warning the runner
				// wrote: files from before the power-cap rule called
				// every power-capped timing throttled.
				row.Throttled, _ = analyze.ThrottledDuring(c, row.MaxSMClockMHz)
			}
		}
		if c := ir.Correctness; c != nil && name != result.Reference {
			abs, rel := c.MaxAbsError, c.MaxRelError
			row.MaxAbsError, row.MaxRelError = &abs, &rel
		}
		if tp := ir.Throughput; tp != nil {
			row.TFLOPS, row.GBps, row.PctPeakFlops, row.PctPeakBW = tp.TFLOPS, tp.GBps, tp.PctPeakFlops, tp.PctPeakBW
			row.Intensity, row.Bound = tp.ArithmeticIntensity, tp.Bound
		}
		rows = append(rows, row)
	}
	return rows
}

// finishRows fills in what rows have of the run: its fields, each
// candidate's comparison with the baseline, and the warnings that cover
// a timing.
func finishRows(r *result.Results, rows []Row) {
	gpu, uuid := GPUOf(r)
	stack, policy := StackOf(r), ClockPolicyOf(r)
	throttled := map[[2]string]bool{}
	hostBusy := map[[2]string]bool{}
	for _, w := range r.Warnings {
		if w.Kind == analyze.WarnHostBusy {
			hostBusy[[2]string{w.Implementation, w.Label}] = true
		}
		// A run-level warning (no implementation) marks no timing: each is
		// judged by its own readings.
		if w.Kind == analyze.WarnThrottled && w.Implementation != "" {
			throttled[[2]string{w.Implementation, w.Label}] = true
		}
	}
	// Each candidate's comparison with the baseline at each case, looked
	// up by row: scanning the comparisons for every row made flattening
	// quadratic in the cases (a run at the case cap took minutes).
	type cmpKey struct{ impl, label string }
	comparisons := make(map[cmpKey]result.Comparison, len(r.Comparisons))
	for _, cmp := range r.Comparisons {
		if cmp.B == r.Baseline {
			comparisons[cmpKey{cmp.A, cmp.Label}] = cmp // the last one wins, as it always did
		}
	}
	for i := range rows {
		row := &rows[i]
		row.Experiment, row.JobID, row.Date, row.Status, row.Mode = r.Experiment, r.JobID, r.CreatedAt.UTC(), r.Status, r.Mode
		row.Host, row.GPU, row.GPUUUID, row.Driver, row.CUDA, row.Torch = r.Env.Host, gpu, uuid, r.Env.Driver, r.Env.CUDARuntime, r.Env.Torch
		row.Commit, row.Stack, row.ClockPolicy = r.Env.GitCommit, stack, policy
		if row.MedianMS > 0 {
			if row.Clock == "" {
				row.Clock = (&result.Timing{}).ClockOf(r.Mode)
			}
			if row.ClockReadings == 0 {
				// No readings of its own: the runner's warning on it.
				row.Throttled = throttled[[2]string{row.Implementation, row.Case}]
			}
			row.HostBusy = hostBusy[[2]string{row.Implementation, row.Case}]
		}
		if cmp, ok := comparisons[cmpKey{row.Implementation, row.Case}]; ok {
			row.Speedup, row.Verdict = cmp.Speedup, cmp.Verdict
		}
	}
}

// MaxSMClock is the highest SM clock r's GPUs allowed, as the runner read
// it before timing (0 when it did not).
func MaxSMClock(r *result.Results) int {
	m := 0
	for _, g := range r.Env.GPUs {
		if g.Before != nil {
			m = max(m, g.Before.MaxSMClockMHz)
		}
	}
	return m
}

// clockReasons is the reasons that held c's clocks back, each with the
// share of the readings it was active in where c counts them: "sw_power_cap
// 3/5, hw_slowdown 1/5".
func clockReasons(c *result.Clocks) string {
	var parts []string
	for _, r := range c.ClockEventReasons {
		if n, ok := c.ReasonReadings[r]; ok {
			parts = append(parts, fmt.Sprintf("%s %d/%d", r, n, c.Readings))
		} else {
			parts = append(parts, r)
		}
	}
	return strings.Join(parts, ", ")
}

// implOrder is the order of a case's rows, the table's (report):
// the reference, then the run's implementations in spec order, then any
// others the case has (sorted).
func implOrder(r *result.Results, c result.Case) []string {
	var out []string
	if _, ok := c.Results[result.Reference]; ok {
		out = append(out, result.Reference)
	}
	seen := map[string]bool{result.Reference: true}
	for _, n := range r.Implementations {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	var rest []string
	for n := range c.Results {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// GPUOf names the kind of device a run timed on: the GPU's model ("2x
// NVIDIA H100 80GB HBM3" for several of one model), or "cpu: <model>"
// without one; and the UUIDs of its GPUs.
func GPUOf(r *result.Results) (model, uuids string) {
	if len(r.Env.GPUs) == 0 {
		if r.Env.CPU != "" {
			return "cpu: " + r.Env.CPU, ""
		}
		return "cpu", ""
	}
	var names, ids []string
	for _, g := range r.Env.GPUs {
		names = append(names, g.Name)
		if g.UUID != "" {
			ids = append(ids, g.UUID)
		}
	}
	model = names[0]
	if len(names) > 1 {
		if slices.Equal(slices.Compact(slices.Clone(names)), names[:1]) {
			model = fmt.Sprintf("%dx %s", len(names), names[0])
		} else {
			model = strings.Join(names, " + ")
		}
	}
	return model, strings.Join(ids, ",")
}

// StackOf is the software a run's base image brought that bears on its
// timings: the Python, PyTorch, Triton and NumPy versions. results.json
// names the job's image, whose tag changes with the runner, not the base.
func StackOf(r *result.Results) string {
	var parts []string
	for _, p := range [][2]string{{"python", r.Env.Python}, {"torch", r.Env.Torch}, {"triton", r.Env.Triton}, {"numpy", r.Env.Numpy}} {
		if p[1] != "" {
			parts = append(parts, p[0]+" "+p[1])
		}
	}
	return strings.Join(parts, ", ")
}

// ClockPolicyOf is what the host let the GPUs' clocks do during the run,
// as the runner read it before timing: the highest SM clock allowed and
// the power limit ("max 1980 MHz, 700 W"), so that a host whose clocks were
// capped or locked lower is another kind of machine. Empty on a CPU run.
func ClockPolicyOf(r *result.Results) string {
	var parts []string
	for _, g := range r.Env.GPUs {
		if g.Before == nil {
			continue
		}
		var p []string
		if g.Before.MaxSMClockMHz > 0 {
			p = append(p, "max "+strconv.Itoa(g.Before.MaxSMClockMHz)+" MHz")
		}
		if g.Before.PowerLimitW > 0 {
			p = append(p, strconv.FormatFloat(g.Before.PowerLimitW, 'f', -1, 64)+" W")
		}
		if s := strings.Join(p, ", "); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// Major is the part of a version before its first dot: "580" of
// "580.159.04", "12" of "12.4".
func Major(version string) string {
	v, _, _ := strings.Cut(version, ".")
	return v
}

// columns before the parameters, and after them.
var (
	headColumns = []string{"experiment", "job_id", "date", "status", "host", "gpu", "gpu_uuid", "driver", "cuda", "torch", "commit", "case"}
	tailColumns = []string{"implementation", "impl_status", "median_ms", "q1_ms", "q3_ms", "clock", "samples", "converged", "throttled",
		"sm_clock_mhz", "power_w", "clock_reasons", "host_busy", "tflops", "gbps", "pct_peak_flops", "pct_peak_bw", "arithmetic_intensity", "bound", "speedup", "verdict", "max_abs_error", "max_rel_error", "regress", "series_id", "stack", "autotune", "error"}
)

// paramColumn is the column of parameter k: "param_" and the name, with
// anything but letters, digits and _ made _, so it is also a valid Python
// and SQL identifier.
func paramColumn(k string) string { return "param_" + notIdent.ReplaceAllString(k, "_") }

var notIdent = regexp.MustCompile(`[^A-Za-z0-9_]`)

// WriteCSV writes rows with a header: the run's columns, one param_<name>
// column per parameter any row has (sorted; empty where a row lacks it),
// then the implementation's figures. Numbers are written in full
// precision, dates in RFC 3339, booleans as true/false; a missing figure
// is an empty cell; text a spreadsheet would take for a formula is
// quoted, and control sequences dropped (Cell).
func WriteCSV(w io.Writer, rows []Row) error {
	var keys []string
	seen := map[string]bool{}
	for _, r := range rows {
		for k := range r.Params {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	cw, err := NewCSV(w, keys)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	return cw.Flush()
}

// CSV writes rows as WriteCSV does, one at a time, for a reader that
// streams them: its parameter columns are named when it is made.
type CSV struct {
	cw   *csv.Writer
	keys []string
	rec  []string
}

// NewCSV writes the header of a CSV whose parameter columns are params'
// (sorted here).
func NewCSV(w io.Writer, params []string) (*CSV, error) {
	keys := slices.Sorted(slices.Values(params))
	c := &CSV{cw: csv.NewWriter(w), keys: keys}
	head := slices.Clone(headColumns)
	for _, k := range keys {
		head = append(head, paramColumn(k))
	}
	head = append(head, tailColumns...)
	if err := c.cw.Write(head); err != nil {
		return nil, fmt.Errorf("write csv: %w", err)
	}
	return c, nil
}

// Write writes one row (a parameter the header lacks is left out).
func (c *CSV) Write(r Row) error {
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		// 12 significant digits: the float64 noise of arithmetic
		// (0.16317700000000002) is not a digit of the measurement.
		return strconv.FormatFloat(v, 'g', 12, 64)
	}
	rec := append(c.rec[:0], r.Experiment, r.JobID, r.Date.UTC().Format(time.RFC3339), r.Status, r.Host, r.GPU, r.GPUUUID,
		r.Driver, r.CUDA, r.Torch, r.Commit, r.Case)
	for _, k := range c.keys {
		v, ok := r.Params[k]
		if !ok {
			rec = append(rec, "")
			continue
		}
		rec = append(rec, spec.FormatValue(v))
	}
	samples := ""
	if r.Samples > 0 {
		samples = strconv.Itoa(r.Samples)
	}
	timed := r.MedianMS > 0
	rec = append(rec, r.Implementation, r.ImplStatus, num(r.MedianMS), num(r.Q1MS), num(r.Q3MS), r.Clock, samples,
		boolCell(r.Converged, timed), boolCell(r.Throttled, timed), intCell(r.SMClockMHz), num(r.PowerW), r.ClockReasons,
		boolCell(r.HostBusy, timed), num(r.TFLOPS), num(r.GBps), num(r.PctPeakFlops),
		num(r.PctPeakBW), num(r.Intensity), r.Bound, num(r.Speedup), r.Verdict, errCell(r.MaxAbsError), errCell(r.MaxRelError), r.Regress, seriesCell(r.SeriesID), r.Stack, r.Autotune, r.Error)
	for i, cell := range rec {
		rec[i] = table.CSVCell(cell)
	}
	c.rec = rec
	if err := c.cw.Write(rec); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// intCell is a whole number's cell, empty for 0 (not read).
func intCell(v int) string {
	if v == 0 {
		return ""
	}
	return strconv.Itoa(v)
}

// seriesCell is a history row's series id ("" elsewhere).
func seriesCell(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// errCell is an error figure's cell: empty when the implementation was
// not checked, 0 when it matched the reference exactly.
func errCell(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

// Flush writes what is buffered, and returns the first error of the
// writes.
func (c *CSV) Flush() error {
	c.cw.Flush()
	if err := c.cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

func boolCell(v, known bool) string {
	if !known {
		return ""
	}
	return strconv.FormatBool(v)
}
