package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/internal/text"
	"github.com/xrun-dev/xrun/result"
)

// Text writes a compact terminal table of r: one row per case and
// implementation with its status, median, q1-q3, speedup and verdict over
// the baseline, throughput against the bound that applies (TFLOPS or GB/s,
// with the share of the GPU's peak) and max abs error; then one line per
// criterion and the warnings.
//
// The errors, tracebacks and labels come from the experiment's code: their
// control sequences are dropped (text.Safe) wherever the table goes, a CI
// log or a file as much as a terminal.
func Text(w io.Writer, r *result.Results) error {
	return TextWith(w, r, TextOptions{})
}

// TextOptions change what Text says.
type TextOptions struct {
	// ErrorShown says the run's error is on the reader's screen already
	// (the log an attached xrun submit just streamed there): the table
	// points to it rather than saying it again.
	ErrorShown bool
}

// TextWith is Text with o.
func TextWith(w io.Writer, r *result.Results, o TextOptions) error {
	ew := &errWriter{w: text.NewSafeWriter(w)}
	head := []string{r.Experiment}
	if r.JobID != "" {
		head = append(head, "job "+r.JobID)
	}
	head = append(head, r.Status)
	if g := gpuSummary(r); g != "" {
		head = append(head, g)
	} else if r.Mode != "" {
		head = append(head, r.Mode)
	}
	fmt.Fprintf(ew, "%s\n", strings.Join(head, "  "))
	switch {
	case r.Error != "" && o.ErrorShown:
		fmt.Fprintf(ew, "error: in the log above\n")
	case r.Error != "" && r.Error != r.Status: // "cancelled" is said by the status
		fmt.Fprintf(ew, "error: %s\n", text.Short(r.Error, 160))
	}
	if s := analyze.NothingCompared(r); s != "" {
		fmt.Fprintln(ew, s)
	}
	if s := splitLine(r.Split); s != "" {
		fmt.Fprintln(ew, s)
	}
	fmt.Fprintln(ew)
	if len(r.Cases) > 0 {
		// SPEEDUP only when some row is compared (a run with one
		// implementation and no baseline has nothing to say there).
		t := &table.Table{}
		compared := false
		cols := columns(r)
		u := unitsOf(r)
		cmps := comparisonsOf(r)
		for i, c := range r.Cases {
			for _, n := range implNames(r) {
				ir := c.Results[n]
				if ir == nil {
					continue
				}
				med, iqr, speed, through, maxErr := "-", "-", "-", "-", "-"
				if t := timing(ir); t != nil {
					med = u.time.Format(t.MedianMS, timeDigits)
					iqr = u.time.Format(t.Q1MS, timeDigits) + "-" + u.time.Format(t.Q3MS, timeDigits)
					if !t.Converged {
						med += "*"
					}
				}
				if cmp := cmps.of(n, c); cmp != nil && !wrong(r, n, ir) {
					speed = table.Speedup(cmp.Speedup) + " " + cmp.Verdict
					compared = true
				} else if n == r.Baseline && timing(ir) != nil {
					speed = "baseline"
					compared = true
				}
				if ir.Throughput != nil {
					through = fmtBound(ir.Throughput, u)
				}
				if ir.Correctness != nil {
					maxErr = table.MaxError(ir.Correctness.MaxAbsError)
				}
				t.Add(table.Text(cols[i]), table.Text(n), table.Fig(ir.Status), table.Fig(med), table.Fig(iqr),
					table.Fig(speed), table.Fig(through), table.Fig(maxErr))
			}
		}
		t.Columns = table.Heads("CASE", "IMPL", "STATUS", "MEDIAN "+u.time.Name, "Q1-Q3 "+u.time.Name, "SPEEDUP", "THROUGHPUT", "MAX ERR")
		if !compared {
			t.Drop(5)
		}
		if err := t.WriteText(ew, ""); err != nil {
			return fmt.Errorf("write results table: %w", err)
		}
		if notConverged(r) {
			fmt.Fprintln(ew, "* did not converge (see warnings)")
		}
		if lines := failures(r); len(lines) > 0 {
			fmt.Fprintln(ew, "\nnot ok:")
			for _, line := range lines {
				fmt.Fprintln(ew, "  "+line)
			}
		}
		if lines := skips(r); len(lines) > 0 {
			fmt.Fprintln(ew, "\nskipped:")
			for _, line := range lines {
				fmt.Fprintln(ew, "  "+line)
			}
		}
		if t := autotuneTable(r); len(t.Rows) > 0 {
			fmt.Fprintln(ew, "\nautotuned (the config each kernel ran with):")
			t.Columns = nil
			if err := t.WriteText(ew, "  "); err != nil {
				return fmt.Errorf("write results table: %w", err)
			}
		}
	}
	if len(r.Criteria) > 0 {
		fmt.Fprintln(ew, "\ncriteria:")
		for _, c := range r.Criteria {
			fmt.Fprintln(ew, textCriterion.line(c))
		}
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(ew, "\nwarnings:")
		for _, wn := range r.Warnings {
			fmt.Fprintf(ew, "  %s: %s\n", wn.Kind, wn.Message)
		}
	}
	if ew.err != nil {
		return fmt.Errorf("write results table: %w", ew.err)
	}
	return nil
}

// fmtBound shows the throughput against the bound that applies: of the
// compute and memory rates, the one nearer its peak (a memory-bound
// kernel's FLOP rate says little while its GB/s say it is at 80%). With no
// peaks known (a CPU run, a GPU missing from the table) it is the FLOP rate
// where the model counts FLOPs, else the bandwidth; "-" with no work model.
// Each rate is in the unit the table picked for it from all its values, with
// three significant digits.
func fmtBound(t *result.Throughput, u tableUnits) string {
	flops := u.flops.Format(t.TFLOPS, 3) + " " + u.flops.Name
	bw := u.bw.Format(t.GBps, 3) + " " + u.bw.Name
	switch {
	case t.PctPeakFlops > 0 && t.PctPeakFlops >= t.PctPeakBW:
		return flops + " " + table.Percent(t.PctPeakFlops)
	case t.PctPeakBW > 0:
		return bw + " " + table.Percent(t.PctPeakBW)
	case t.TFLOPS > 0:
		return flops
	case t.GBps > 0:
		return bw
	}
	return "-"
}

func notConverged(r *result.Results) bool {
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if t := timing(ir); t != nil && !t.Converged {
				return true
			}
		}
	}
	return false
}

// failures lists one line per implementation and case whose status is not ok,
// with its reason, and under it the last lines of the traceback (or of the
// worker's stderr): results.json keeps all of it, but the terminal is where
// a failure is first seen. A tail repeated by the same implementation (an
// import error fails every case alike) is shown once.
func failures(r *result.Results) []string {
	var out []string
	cols := columns(r)
	shown := map[string]bool{}
	// What a stopped run did not run is said once per reason, with its
	// cases, not once per implementation and case.
	var reasons []string
	notRun := map[string][]string{}
	for i, c := range r.Cases {
		byReason, timed := map[string][]string{}, 0
		for _, n := range implNames(r) {
			if ir := c.Results[n]; ir != nil && ir.Status == result.ImplNotRun && ir.Error != "" {
				why := text.Short(ir.Error, 160)
				byReason[why] = append(byReason[why], n)
			} else if ir != nil && ir.Status != result.ImplSkipped {
				timed++
			}
		}
		for _, why := range slices.Sorted(maps.Keys(byReason)) {
			if _, ok := notRun[why]; !ok {
				reasons = append(reasons, why)
			}
			where := cols[i]
			if timed > 0 || len(byReason) > 1 {
				where += " (" + strings.Join(byReason[why], ", ") + ")"
			}
			notRun[why] = append(notRun[why], where)
		}
	}
	for _, why := range reasons {
		out = append(out, fmt.Sprintf("not_run: %s: %s", why, listCases(notRun[why])))
	}
	for i, c := range r.Cases {
		for _, n := range implNames(r) {
			ir := c.Results[n]
			if ir == nil || ir.Status == result.ImplOK || ir.Status == result.ImplSkipped ||
				ir.Status == result.ImplNotRun && ir.Error != "" {
				continue
			}
			why := text.Short(ir.Error, 160)
			if why == "" && ir.Correctness != nil {
				why = text.Short(ir.Correctness.Reason, 160)
			}
			if why == "" {
				continue
			}
			out = append(out, fmt.Sprintf("%s %s %s: %s", cols[i], n, ir.Status, why))
			tail := lastLines(afterFirstLine(ir.Error), tailLines)
			if tail == nil {
				tail = lastLines(ir.StderrTail, tailLines)
			}
			if key := n + "\x00" + strings.Join(tail, "\n"); len(tail) > 0 && !shown[key] {
				shown[key] = true
				for _, l := range tail {
					out = append(out, "  | "+l)
				}
			}
		}
	}
	return out
}

// listCases lists the cases of one line of failures: all of them, or,
// past eight, the first three, the last two and how many.
func listCases(cases []string) string {
	if len(cases) <= 8 {
		return strings.Join(cases, ", ")
	}
	return fmt.Sprintf("%s, ... %s (%d cases)", strings.Join(cases[:3], ", "), strings.Join(cases[len(cases)-2:], ", "), len(cases))
}

// tailLines is how much of a traceback the table shows: a Python
// traceback's last frame, its source line and the exception.
const tailLines = 6

func afterFirstLine(s string) string {
	_, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return rest
}

// lastLines returns the last n non-blank lines of s, each cut to 200
// bytes, or nil.
func lastLines(s string, n int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l = strings.TrimRight(l, " \t\r"); l != "" {
			if len(l) > 200 {
				l = l[:197] + "..."
			}
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// skips lists one line per implementation skipped on some case, with why.
func skips(r *result.Results) []string {
	var out []string
	for _, n := range implNames(r) {
		for _, c := range r.Cases {
			if ir := c.Results[n]; ir != nil && ir.Status == result.ImplSkipped {
				out = append(out, fmt.Sprintf("%s: %s", n, text.Short(ir.Error, 160)))
				break
			}
		}
	}
	return out
}

// errWriter remembers the first write error so the many small writes above
// need no checks of their own.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// splitLine says which part of its sweep a run ran, or, of a gathered
// run, which jobs ran its parts and where; "" for a run of a whole sweep.
func splitLine(sp *result.Split) string {
	switch {
	case sp == nil:
		return ""
	case sp.Part > 0:
		return fmt.Sprintf("part %s of the sweep: %s", sp, sp.Every())
	}
	var jobs []string
	for _, j := range sp.Jobs {
		jobs = append(jobs, fmt.Sprintf("part %d/%d job %s on %s (%s)", j.Part, sp.Parts, j.JobID, j.Host, j.Status))
	}
	return fmt.Sprintf("gathered from %d jobs: %s", sp.Parts, strings.Join(jobs, ", "))
}
