// Package table is the one model of a report's table: a header of
// columns and rows of cells, written the same way by every report as a
// terminal table (columns aligned, two spaces apart) and a markdown
// table, and the one CSV cell every CSV xrun writes is made of
// (CSVCell), and how each figure reads (Sig, Percent, TimeUnit ...).
package table

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/xrun-dev/xrun/internal/text"
)

// Kind says whose text a cell is, which decides how markdown writes it.
type Kind int

const (
	// Figure is xrun's own text (a number, a unit, a verdict, a status):
	// written as it is in every format.
	Figure Kind = iota
	// Name is text the run chose (an experiment's, an implementation's or
	// a case's name, a host, an error): in markdown without its control
	// sequences and escaped (text.Markdown), so it reads as written.
	Name
	// ID is an identifier (a job id): a code span in markdown, or escaped
	// text where it is not a plain one (a path names a results file).
	ID
)

// Cell is one cell of a row.
type Cell struct {
	Text string
	Kind Kind
}

// Fig, Text and Code make a cell of each kind.
func Fig(s string) Cell  { return Cell{s, Figure} }
func Text(s string) Cell { return Cell{s, Name} }
func Code(s string) Cell { return Cell{s, ID} }

// Column is a column's head: Head in every format, or Markdown in
// markdown where the terminal's wording (JOB, IMPL) is not markdown's
// (job, impl).
type Column struct {
	Head     Cell
	Markdown string
}

// Table is a header of columns and rows of cells; a row has one cell per
// column. A table without columns writes its rows alone.
type Table struct {
	Columns []Column
	Rows    [][]Cell
}

// Heads is a header of xrun's own words, alike in every format.
func Heads(names ...string) []Column {
	out := make([]Column, len(names))
	for i, n := range names {
		out[i] = Column{Head: Fig(n)}
	}
	return out
}

// Col is a column headed text on a terminal and md in markdown.
func Col(text, md string) Column { return Column{Head: Fig(text), Markdown: md} }

// OrDash is a cell's text, or "-" where it has none.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Add appends a row.
func (t *Table) Add(cells ...Cell) { t.Rows = append(t.Rows, cells) }

// Drop removes column i, its head and its cell in every row.
func (t *Table) Drop(i int) {
	if t.Columns != nil {
		t.Columns = append(t.Columns[:i:i], t.Columns[i+1:]...)
	}
	for r, row := range t.Rows {
		t.Rows[r] = append(row[:i:i], row[i+1:]...)
	}
}

// WriteText writes the table for a terminal: each column as wide as its
// widest cell and two spaces from the next, the last cell of a line
// unpadded, each line after indent.
func (t *Table) WriteText(w io.Writer, indent string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rows := t.Rows
	if t.Columns != nil {
		head := make([]Cell, len(t.Columns))
		for i, c := range t.Columns {
			head[i] = c.Head
		}
		rows = append([][]Cell{head}, rows...)
	}
	for _, row := range rows {
		cols := make([]string, len(row))
		for i, c := range row {
			cols[i] = c.Text
		}
		if _, err := fmt.Fprintln(tw, indent+strings.Join(cols, "\t")); err != nil {
			return err
		}
	}
	return tw.Flush()
}

// WriteMarkdown writes the table as a GitHub markdown table.
func (t *Table) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	row := func(cells []Cell) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + c.Markdown() + " |")
		}
		b.WriteString("\n")
	}
	if t.Columns != nil {
		b.WriteString("|")
		for _, c := range t.Columns {
			head := c.Markdown
			if head == "" {
				head = c.Head.Markdown()
			}
			b.WriteString(" " + head + " |")
		}
		b.WriteString("\n|" + strings.Repeat("---|", len(t.Columns)) + "\n")
	}
	for _, r := range t.Rows {
		row(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown is the cell as markdown writes it (Kind).
func (c Cell) Markdown() string {
	switch c.Kind {
	case Name:
		return MarkdownText(c.Text)
	case ID:
		if c.Text == "" || strings.ContainsAny(c.Text, "`|\\\n\r") {
			return MarkdownText(c.Text)
		}
		return "`" + c.Text + "`"
	}
	return c.Text
}

// MarkdownText is a run's own text for markdown: without its control
// sequences, then escaped (text.Markdown), so that a sequence's bracket is not
// escaped out of text.Safe's sight.
func MarkdownText(s string) string { return text.Markdown(text.Safe(s)) }

// CSVCell is a CSV cell that a spreadsheet reads as the text it is: text
// beginning with =, +, - or @ (a formula to Excel, LibreOffice and Google
// Sheets), or with a tab or carriage return, gets a single quote in front,
// as OWASP advises against CSV injection; an implementation named
// =HYPERLINK(...) or a sweep value "@SUM(A1)" stays text. A number
// (-1.5, +3, -1e-05) is a number, and stays as it is. Every CSV xrun
// writes (results --csv, history --csv, WriteCSV) goes through it.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	// The experiment's names and errors, without their control sequences:
	// a terminal that cats the CSV would play them. (Tabs and line breaks
	// are CSV's to quote.)
	if strings.ContainsFunc(s, func(r rune) bool {
		return (r < 0x20 && r != '\t' && r != '\r' && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0)
	}) {
		s = text.Safe(s)
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
	default:
		return s
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil && strings.Trim(s, "0123456789.eE+-") == "" {
		return s
	}
	return "'" + s
}
