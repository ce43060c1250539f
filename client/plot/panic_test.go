package plot

import (
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// A figure gonum cannot scale (a 0 on a log axis) is an error of that
// figure, not a panic of the command.
func TestSaveRecoversFromGonum(t *testing.T) {
	p := newPlot("t", "x", "y")
	p.Y.Scale = gplot.LogScale{}
	l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 0}, {X: 2, Y: 1}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	p.Y.Min, p.Y.Max = 0, 1
	if _, err := save(p, nil, t.TempDir(), "bad"); err == nil || !strings.Contains(err.Error(), "draw figure bad") {
		t.Errorf("save: %v", err)
	}
}
