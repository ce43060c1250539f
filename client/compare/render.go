package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/xrun-dev/xrun/internal/mdtext"
	"github.com/xrun-dev/xrun/internal/numfmt"
	"github.com/xrun-dev/xrun/internal/termsafe"
	"github.com/xrun-dev/xrun/result"
)

// The report as a person or a script reads it: JSON, the terminal tables
// and markdown, one unit per column.

// JSON writes the report as indented JSON.
func (rep *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// Text writes the jobs, then one table per sweep point: a row per
// implementation, and per job its median, speedup over its baseline,
// TFLOPS, and (after the first) the time ratio against the first job.
func (rep *Report) Text(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "comparing %s\n\n", strings.Join(rep.Experiments, ", "))
	fmt.Fprintln(tw, "#\tJOB\tHOST\tGPU\tSTATUS")
	for _, j := range rep.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.Key, j.ID, dash(j.Host), j.GPU, j.Status)
	}
	units := rep.units()
	for _, c := range rep.Cases {
		fmt.Fprintf(tw, "\n%s\n", c.Label)
		head := []string{"IMPL"}
		for i, j := range rep.Jobs {
			head = append(head, j.Key+": "+units[i].time.Name, j.Key+": speedup", j.Key+": "+units[i].flops.Name)
			if j.Key != "1" {
				head = append(head, j.Key+" vs 1")
			}
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, row := range c.Rows {
			cols := []string{row.Implementation}
			for i, cell := range row.Cells {
				cols = append(cols, cellCols(cell, i > 0, units[i])...)
			}
			fmt.Fprintln(tw, strings.Join(cols, "\t"))
		}
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(tw)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// Markdown writes the same tables in GitHub markdown.
func (rep *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	// What the runs named (experiments, cases, implementations, hosts)
	// is text, not markdown (mdtext).
	fmt.Fprintf(&b, "### Comparison: %s\n\n", mdText(strings.Join(rep.Experiments, ", ")))
	b.WriteString("| # | job | host | GPU | status |\n|---|---|---|---|---|\n")
	for _, j := range rep.Jobs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", j.Key, code(j.ID), mdText(dash(j.Host)), mdText(j.GPU), mdText(j.Status))
	}
	units := rep.units()
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "\n**%s**\n\n| impl |", mdText(c.Label))
		n := 1
		for i, j := range rep.Jobs {
			fmt.Fprintf(&b, " %s: %s | %s: speedup | %s: %s |", j.Key, units[i].time.Name, j.Key, j.Key, units[i].flops.Name)
			n += 3
			if j.Key != "1" {
				fmt.Fprintf(&b, " %s vs 1 |", j.Key)
				n++
			}
		}
		b.WriteString("\n|" + strings.Repeat("---|", n) + "\n")
		for _, row := range c.Rows {
			fmt.Fprintf(&b, "| %s |", mdText(row.Implementation))
			for i, cell := range row.Cells {
				for _, col := range cellCols(cell, i > 0, units[i]) {
					fmt.Fprintf(&b, " %s |", col)
				}
			}
			b.WriteString("\n")
		}
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n")
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "> %s\n", mdText(n))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// jobUnits are the units of one job's columns.
type jobUnits struct{ time, flops numfmt.Unit }

// units picks each job's time and FLOP-rate units from all its cells, so a
// column reads in one unit from one sweep point to the next.
func (rep *Report) units() []jobUnits {
	out := make([]jobUnits, len(rep.Jobs))
	for i := range rep.Jobs {
		var ms, tflops []float64
		for _, c := range rep.Cases {
			for _, row := range c.Rows {
				if i < len(row.Cells) {
					ms = append(ms, row.Cells[i].MedianMS)
					tflops = append(tflops, row.Cells[i].TFLOPS)
				}
			}
		}
		out[i] = jobUnits{time: numfmt.TimeUnit(ms...), flops: numfmt.FlopsUnit(tflops...)}
	}
	return out
}

// cellCols renders a cell: a failed or missing implementation shows its
// status where the time would be.
func cellCols(c Cell, vs bool, u jobUnits) []string {
	ms, speed, tflops, ratio := "-", "-", "-", "-"
	switch {
	case c.MedianMS > 0:
		ms = u.time.Format(c.MedianMS, 3)
		if c.Status != result.ImplOK && c.Status != "" {
			ms += " (" + c.Status + ")"
		}
	case c.Status != "":
		ms = c.Status
	}
	switch {
	case c.Baseline:
		speed = "baseline"
	case c.Speedup > 0:
		speed = numfmt.Speedup(c.Speedup)
		if c.Verdict != "" {
			speed += " " + c.Verdict
		}
	}
	if c.TFLOPS > 0 {
		tflops = u.flops.Format(c.TFLOPS, 3)
	}
	if c.VsFirst > 0 {
		ratio = numfmt.Speedup(c.VsFirst)
		if c.VsFirstVerdict != "" {
			ratio += " " + c.VsFirstVerdict
		}
		if c.ConfigChange != "" {
			ratio += " (config changed)"
		}
	}
	out := []string{ms, speed, tflops}
	if vs {
		out = append(out, ratio)
	}
	return out
}

// mdText is a run's own text for markdown: without control sequences,
// then escaped (mdtext).
func mdText(s string) string { return mdtext.Escape(termsafe.String(s)) }

// code is a job id as a code span; an id that is not a plain one (a path's
// results.json is named by its path) is escaped text instead.
func code(id string) string {
	if id == "" || strings.ContainsAny(id, "`|\\\n\r") {
		return mdText(id)
	}
	return "`" + id + "`"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
