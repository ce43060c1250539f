package render

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/client/flat"
	"github.com/xrun-dev/xrun/client/plot"
	"github.com/xrun-dev/xrun/report"
	"github.com/xrun-dev/xrun/result"
)

// Format is a way to print results.
type Format string

const (
	// Table is the text table a person reads (report).
	Table Format = "text"
	// RawJSON is results.json as the runner wrote it.
	RawJSON  Format = "json"
	Markdown Format = "markdown"
	// CSV is one row per implementation and case (client/flat).
	CSV Format = "csv"
)

// Options change how Results prints.
type Options struct {
	// ErrorShown points to the run's error rather than repeating it in
	// the table: the log on the same screen just said it.
	ErrorShown bool
	// Figures are linked at the end of a markdown report.
	Figures []plot.Figure
}

// Results prints r in format f (RawJSON re-encodes it: print the file
// the runner wrote where there is one).
func Results(w io.Writer, r *result.Results, f Format, o Options) error {
	switch f {
	case RawJSON:
		return JSON(w, r)
	case CSV:
		// Cells carry the experiment's text (errors): no control
		// sequence reaches a spreadsheet or a CI log through them.
		return flat.WriteCSV(SafeAlways(w), flat.Rows(r))
	case Markdown:
		if err := report.Markdown(w, r); err != nil {
			return err
		}
		return figureLinks(w, o.Figures)
	}
	return report.TextWith(w, r, report.TextOptions{ErrorShown: o.ErrorShown})
}

// ErrFigureDir is wrapped by Figures' errors that come of the directory
// or of a run with nothing to draw: the user's to fix.
var ErrFigureDir = errors.New("cannot draw the figures")

// Figures writes r's figures (time and speedup against the swept
// parameter, and the roofline on a GPU whose peaks are known) to dir,
// and lists them on note.
func Figures(r *result.Results, dir string, note io.Writer) ([]plot.Figure, error) {
	figs, err := plot.Sweep(r, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFigureDir, err)
	}
	roof, err := plot.Roofline(r, dir)
	switch {
	case errors.Is(err, plot.ErrNoRoofline):
		fmt.Fprintf(note, "no roofline: %v\n", strings.TrimPrefix(err.Error(), plot.ErrNoRoofline.Error()+": "))
	case err != nil:
		return nil, err
	default:
		figs = append(figs, roof)
	}
	for _, f := range figs {
		fmt.Fprintf(note, "wrote %s and %s\n", f.PNG, f.SVG)
	}
	return figs, nil
}

// figureLinks ends a markdown report with its figures, linked by the
// paths they were written to.
func figureLinks(w io.Writer, figs []plot.Figure) error {
	if len(figs) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n## Figures\n\n")
	for _, f := range figs {
		title, _, _ := strings.Cut(f.Title, "\n")
		fmt.Fprintf(&b, "![%s](%s) ([SVG](%s))\n\n", title, filepath.ToSlash(f.PNG), filepath.ToSlash(f.SVG))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Outcome says on note how r came out against its experiment's
// declaration (criteria written with expect: fail), and reports whether
// it came out worse than declared.
func Outcome(r *result.Results, note io.Writer) (worse bool) {
	o := analyze.ExpectedOutcome(r)
	if !o.Declared {
		fmt.Fprintf(note, "note: %s predates declared outcomes (expect: in the criteria): every criterion counts as declared to pass\n", r.Experiment)
	}
	switch {
	case o.Expected:
		fmt.Fprintf(note, "outcome: %s, as the experiment declares\n", r.Status)
		return false
	case len(o.Worse) == 0:
		fmt.Fprintf(note, "outcome: %s, changed from the declared one: %s\n", r.Status, strings.Join(o.Better, "; "))
		return false
	}
	fmt.Fprintf(note, "outcome: %s, worse than declared: %s\n", r.Status, strings.Join(o.Worse, "; "))
	return true
}
