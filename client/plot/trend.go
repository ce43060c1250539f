package plot

import (
	"fmt"
	"image/color"
	"math"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/xrun-dev/xrun/client/regress"
)

// Trend is one series over time with the rule's verdicts.
type Trend struct {
	// Title names the series (experiment, implementation, case) and
	// Machine its kind of machine.
	Title, Machine string
	Rule           regress.Rule
	Points         []TrendPoint
}

// TrendPoint is one run of the series.
type TrendPoint struct {
	Run         string
	At          time.Time
	MedianMS    float64
	Q1MS, Q3MS  float64
	Verdict     regress.Verdict
	ChangePoint bool
}

// statusStyle is how a verdict shows on the trend.
type statusStyle struct {
	label string
	c     color.Color
	shape draw.GlyphDrawer
	r     vg.Length
}

var statusStyles = map[regress.Status]statusStyle{
	regress.Stable:       {"stable", rgb(0x4e79a7), draw.CircleGlyph{}, 3},
	regress.Insufficient: {"insufficient", rgb(0xa0a0a0), draw.CircleGlyph{}, 3},
	regress.Noisy:        {"noisy, not judged", rgb(0x808080), draw.RingGlyph{}, 3.5},
	regress.Suspect:      {"suspect, unconfirmed", rgb(0xf28e2b), draw.PyramidGlyph{}, 4.5},
	regress.Spike:        {"spike (not confirmed)", rgb(0xf28e2b), draw.TriangleGlyph{}, 4.5},
	regress.Regressed:    {"regressed", rgb(0xd62728), draw.BoxGlyph{}, 4.5},
	regress.Improved:     {"improved", rgb(0x2ca02c), draw.PyramidGlyph{}, 4.5},
}

// TrendFigure draws a series' medians run by run (q1-q3 bars), the band
// the rule calls stable (the baseline's median ± the larger of Score
// robust standard deviations and the floor), the baseline's median, the
// change points, and each run's verdict, into dir/name.{png,svg}.
func TrendFigure(t Trend, dir, name string) (Figure, error) {
	if len(t.Points) == 0 {
		return Figure{}, fmt.Errorf("plot trend %s: no runs", t.Title)
	}
	p := newPlot(t.Title+"\n"+t.Machine, "run (date, UTC)", "median time per call (ms)")
	leg := newLegend()

	// The band, in stretches between change points and unjudged runs.
	var stretches [][]int
	var cur []int
	for i, pt := range t.Points {
		judged := pt.Verdict.Baseline >= t.Rule.MinHistory && pt.Verdict.Median > 0
		if pt.ChangePoint || !judged {
			if len(cur) > 0 {
				stretches = append(stretches, cur)
			}
			cur = nil
		}
		if judged {
			cur = append(cur, i)
		}
	}
	if len(cur) > 0 {
		stretches = append(stretches, cur)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	bandColor := color.NRGBA{R: 0x4e, G: 0x79, B: 0xa7, A: 0x38}
	for _, s := range stretches {
		var upper, lower, mid plotter.XYs
		for _, i := range s {
			v := t.Points[i].Verdict
			l, h := t.Rule.Band(v.Median, v.MAD)
			x := float64(i)
			upper = append(upper, plotter.XY{X: x - 0.5, Y: h}, plotter.XY{X: x + 0.5, Y: h})
			lower = append(lower, plotter.XY{X: x - 0.5, Y: l}, plotter.XY{X: x + 0.5, Y: l})
			mid = append(mid, plotter.XY{X: x - 0.5, Y: v.Median}, plotter.XY{X: x + 0.5, Y: v.Median})
			lo, hi = math.Min(lo, l), math.Max(hi, h)
		}
		ring := append(plotter.XYs{}, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			ring = append(ring, lower[i])
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return Figure{}, err
		}
		poly.Color, poly.LineStyle.Width = bandColor, 0
		ml, err := plotter.NewLine(mid)
		if err != nil {
			return Figure{}, err
		}
		ml.Color, ml.Width, ml.Dashes = rgb(0x4e79a7), vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(poly, ml)
	}
	if len(stretches) > 0 {
		leg.add(fmt.Sprintf("stable: median ± max(%gσ, %g%%)", t.Rule.Score, 100*t.Rule.Floor), bandThumb{bandColor})
		leg.add(fmt.Sprintf("baseline median (last %d runs at most)", t.Rule.Window), lineThumb{rgb(0x4e79a7)})
	}

	// Change points.
	var cps []float64
	for i, pt := range t.Points {
		if pt.ChangePoint && i > 0 {
			cps = append(cps, float64(i)-0.5)
		}
	}

	// Bars, then glyphs by verdict.
	var bars errs
	byStatus := map[regress.Status]plotter.XYs{}
	errored := 0
	for i, pt := range t.Points {
		if pt.MedianMS <= 0 {
			errored++
			continue
		}
		x := float64(i)
		lo, hi = math.Min(lo, math.Min(pt.MedianMS, pt.Q1MS)), math.Max(hi, math.Max(pt.MedianMS, pt.Q3MS))
		if pt.Q1MS > 0 && pt.Q3MS > 0 && len(t.Points) <= manyRuns {
			bars.xys = append(bars.xys, plotter.XY{X: x, Y: pt.MedianMS})
			bars.errs = append(bars.errs, struct{ Low, High float64 }{pt.MedianMS - pt.Q1MS, pt.Q3MS - pt.MedianMS})
		}
		st := pt.Verdict.Shown()
		if st == regress.Errored {
			errored++
			continue
		}
		byStatus[st] = append(byStatus[st], plotter.XY{X: x, Y: pt.MedianMS})
	}
	if len(bars.xys) > 0 {
		eb, err := plotter.NewYErrorBars(bars)
		if err != nil {
			return Figure{}, err
		}
		eb.Color, eb.Width, eb.CapWidth = color.Gray{Y: 150}, vg.Points(1), vg.Points(4)
		p.Add(eb)
	}
	for _, st := range []regress.Status{regress.Insufficient, regress.Noisy, regress.Stable, regress.Improved, regress.Spike, regress.Suspect, regress.Regressed} {
		xys := byStatus[st]
		if len(xys) == 0 {
			continue
		}
		sty := statusStyles[st]
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return Figure{}, err
		}
		r := vg.Points(float64(sty.r))
		if len(t.Points) > manyRuns {
			r /= 2 // hundreds of glyphs side by side: smaller, so that they stay apart
		}
		s.GlyphStyle = draw.GlyphStyle{Color: sty.c, Radius: r, Shape: sty.shape}
		p.Add(s)
		leg.add(fmt.Sprintf("%s: %d", sty.label, len(xys)), glyphThumb{s.GlyphStyle})
	}
	if errored > 0 {
		leg.add(fmt.Sprintf("errored, not drawn: %d", errored))
	}
	if math.IsInf(lo, 1) {
		return Figure{}, fmt.Errorf("plot trend %s: no run has a timing", t.Title)
	}
	p.Y.Min, p.Y.Max = padLin(lo, hi, 0.08)
	p.Y.Tick.Marker = linTicks{}
	for _, x := range cps {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
		if err != nil {
			return Figure{}, err
		}
		l.Color, l.Width, l.Dashes = rgb(0x59a14f), vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: p.Y.Max}}, Labels: []string{"change point (accepted) "}})
		if err != nil {
			return Figure{}, err
		}
		lb.TextStyle[0].Font.Size, lb.TextStyle[0].Font.Variant = vg.Points(8.5), sans
		lb.TextStyle[0].XAlign, lb.TextStyle[0].YAlign = text.XRight, text.YTop
		lb.TextStyle[0].Color = rgb(0x59a14f)
		p.Add(lb)
	}
	if len(cps) > 0 {
		leg.add("change point: new baseline", lineThumb{rgb(0x59a14f)})
	}
	p.X.Min, p.X.Max = -0.7, float64(len(t.Points))-0.3
	ticks, axis := runTicks(t.Points)
	p.X.Tick.Marker, p.X.Label.Text = ticks, axis
	f, err := save(p, leg, dir, name)
	f.Kind = "trend"
	return f, err
}

// manyRuns is where a trend has too many runs for each to show its
// quartiles: past it, the runs are drawn as smaller dots without bars.
const manyRuns = 200

// runTicks labels the runs, at most twelve (times) or six (dates) of
// them, by date, by date and time, by time of day when every run is of one
// day, or to the second when the minutes would repeat: the shortest labels
// that tell the labelled runs apart. Only a labelled run gets a tick once there are more than
// sixty (one per run merged into a bar). axis is the x axis's label, which
// names the day when the labels are times of it.
func runTicks(pts []TrendPoint) (ticks gplot.ConstantTicks, axis string) {
	layouts := []string{"2006-01-02", "2006-01-02 15:04"}
	axis = "run (date, UTC)"
	if day := pts[0].At.UTC().Format("2006-01-02"); day == pts[len(pts)-1].At.UTC().Format("2006-01-02") {
		layouts = []string{"15:04", "15:04:05"}
		axis = "run (time on " + day + ", UTC)"
	}
	// As many labels as fit side by side: a dozen times of day, six
	// dates.
	most := 12
	if len(layouts[0]) > 5 {
		most = 6
	}
	every := max(1, (len(pts)+most-1)/most)
	layout := layouts[len(layouts)-1]
	for _, l := range layouts {
		seen := map[string]bool{}
		unique := true
		for i := 0; i < len(pts); i += every {
			label := pts[i].At.UTC().Format(l)
			unique = unique && !seen[label]
			seen[label] = true
		}
		if unique {
			layout = l
			break
		}
	}
	for i, pt := range pts {
		labelled := i%every == 0
		if !labelled && len(pts) > 60 {
			continue
		}
		t := gplot.Tick{Value: float64(i)}
		if labelled {
			t.Label = pt.At.UTC().Format(layout)
		}
		ticks = append(ticks, t)
	}
	return ticks, axis
}

type bandThumb struct{ c color.Color }

func (b bandThumb) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y + 1}, {X: c.Max.X, Y: c.Min.Y + 1}, {X: c.Max.X, Y: c.Max.Y - 1}, {X: c.Min.X, Y: c.Max.Y - 1}}
	c.FillPolygon(b.c, pts)
}

type lineThumb struct{ c color.Color }

func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle{Color: l.c, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}, c.Min.X, y, c.Max.X, y)
}

type glyphThumb struct{ sty draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) {
	c.DrawGlyph(g.sty, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
}
