package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/xrun-dev/xrun/internal/table"
	"github.com/xrun-dev/xrun/result"
)

// The report as a person or a script reads it: JSON, the terminal tables
// and markdown, one unit per column.

// JSON writes the report as indented JSON.
func (rep *Comparison) JSON(w io.Writer) error {
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
func (rep *Comparison) Text(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "comparing %s\n\n", strings.Join(rep.Experiments, ", "))
	rep.jobTable().WriteText(&b, "")
	for i, t := range rep.caseTables() {
		fmt.Fprintf(&b, "\n%s\n", rep.Cases[i].Label)
		t.WriteText(&b, "")
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(&b)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// Markdown writes the same tables in GitHub markdown.
func (rep *Comparison) Markdown(w io.Writer) error {
	var b strings.Builder
	// What the runs named (experiments, cases, implementations, hosts)
	// is text, not markdown (table.Name).
	fmt.Fprintf(&b, "### Comparison: %s\n\n", table.MarkdownText(strings.Join(rep.Experiments, ", ")))
	rep.jobTable().WriteMarkdown(&b)
	for i, t := range rep.caseTables() {
		fmt.Fprintf(&b, "\n**%s**\n\n", table.MarkdownText(rep.Cases[i].Label))
		t.WriteMarkdown(&b)
	}
	if len(rep.Notes) > 0 {
		fmt.Fprintln(&b)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "> %s\n", table.MarkdownText(n))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

// jobTable is the jobs compared, one row each.
func (rep *Comparison) jobTable() *table.Table {
	t := &table.Table{Columns: []table.Column{table.Col("#", "#"), table.Col("JOB", "job"), table.Col("HOST", "host"), table.Col("GPU", "GPU"), table.Col("STATUS", "status")}}
	for _, j := range rep.Jobs {
		t.Add(table.Fig(j.Key), table.Code(j.ID), table.Text(table.OrDash(j.Host)), table.Text(j.GPU), table.Text(j.Status))
	}
	return t
}

// caseTables are the tables of the sweep points, one each: a row per
// implementation, and per job its median, speedup, TFLOPS and (after the
// first) its ratio against the first job.
func (rep *Comparison) caseTables() []*table.Table {
	units := rep.units()
	head := []table.Column{table.Col("IMPL", "impl")}
	for i, j := range rep.Jobs {
		head = append(head, table.Heads(j.Key+": "+units[i].time.Name, j.Key+": speedup", j.Key+": "+units[i].flops.Name)...)
		if j.Key != "1" {
			head = append(head, table.Heads(j.Key+" vs 1")...)
		}
	}
	var out []*table.Table
	for _, c := range rep.Cases {
		t := &table.Table{Columns: head}
		for _, row := range c.Rows {
			cells := []table.Cell{table.Text(row.Implementation)}
			for i, cell := range row.Cells {
				for _, col := range cellCols(cell, i > 0, units[i]) {
					cells = append(cells, table.Fig(col))
				}
			}
			t.Add(cells...)
		}
		out = append(out, t)
	}
	return out
}

// jobUnits are the units of one job's columns.
type jobUnits struct{ time, flops table.Unit }

// units picks each job's time and FLOP-rate units from all its cells, so a
// column reads in one unit from one sweep point to the next.
func (rep *Comparison) units() []jobUnits {
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
		out[i] = jobUnits{time: table.TimeUnit(ms...), flops: table.FlopsUnit(tflops...)}
	}
	return out
}

// cellCols renders a cell: a failed or missing implementation shows its
// status where the time would be.
func cellCols(c CompareCell, vs bool, u jobUnits) []string {
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
		speed = table.Speedup(c.Speedup)
		if c.Verdict != "" {
			speed += " " + c.Verdict
		}
	}
	if c.TFLOPS > 0 {
		tflops = u.flops.Format(c.TFLOPS, 3)
	}
	if c.VsFirst > 0 {
		ratio = table.Speedup(c.VsFirst)
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
