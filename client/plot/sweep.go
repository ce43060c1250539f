package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

// layout is how a run's cases go on a sweep figure: along one numeric
// parameter, in groups of the other parameters that vary (039's chunk
// sizes), or, when no parameter gives lines of two points or more (the
// shapes of FlashAttention), one category per case.
type layout struct {
	x          string    // the parameter along the x axis; "" for categories
	xs         []float64 // per case: its x (its index for categories)
	group      []int     // per case: its group
	groups     []string  // group labels ("chunk=64"), "" for a single group
	categories []string  // tick labels of categorical cases
	logX       bool
}

func layoutOf(r *result.Results) layout {
	cases := r.Cases
	// The parameters whose value differs between cases, sweep keys first.
	var varying []string
	seen := map[string]bool{}
	consider := append(slices.Clone(r.SweepKeys), sortedKeys(cases)...)
	for _, k := range consider {
		if seen[k] {
			continue
		}
		seen[k] = true
		vals := map[string]bool{}
		for _, c := range cases {
			vals[fmtParam(c.Params[k])] = true
		}
		if len(vals) > 1 {
			varying = append(varying, k)
		}
	}
	best, bestScore := "", 0.0
	for _, k := range varying {
		if !numeric(cases, k) {
			continue
		}
		groups := map[string]bool{}
		for _, c := range cases {
			groups[groupLabel(c, varying, k)] = true
		}
		score := float64(len(cases)) / float64(len(groups))
		if score > bestScore {
			best, bestScore = k, score
		}
	}
	l := layout{xs: make([]float64, len(cases)), group: make([]int, len(cases))}
	if best == "" || bestScore < 2 {
		for i, c := range cases {
			l.xs[i] = float64(i)
			l.categories = append(l.categories, categoryLabel(c, varying))
		}
		l.groups = []string{""}
		return l
	}
	l.x = best
	index := map[string]int{}
	for i, c := range cases {
		g := groupLabel(c, varying, best)
		if _, ok := index[g]; !ok {
			index[g] = len(l.groups)
			l.groups = append(l.groups, g)
		}
		l.group[i] = index[g]
		l.xs[i], _ = toFloat(c.Params[best])
	}
	l.logX = spansDecade(l.xs) || (minPositive(l.xs) > 0 && maxOf(l.xs)/minPositive(l.xs) >= 4)
	return l
}

func sortedKeys(cases []result.Case) []string {
	var keys []string
	for _, c := range cases {
		for k := range c.Params {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func numeric(cases []result.Case, k string) bool {
	for _, c := range cases {
		if _, ok := toFloat(c.Params[k]); !ok {
			return false
		}
	}
	return true
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	}
	return 0, false
}

func fmtParam(v any) string {
	if v == nil {
		return ""
	}
	return spec.FormatValue(v)
}

// groupLabel names a case's group: the varying parameters other than x.
func groupLabel(c result.Case, varying []string, x string) string {
	var parts []string
	for _, k := range varying {
		if k != x {
			parts = append(parts, k+"="+fmtParam(c.Params[k]))
		}
	}
	return strings.Join(parts, " ")
}

// categoryLabel names a case on a categorical axis, two parameters a line.
func categoryLabel(c result.Case, varying []string) string {
	var lines []string
	for i := 0; i < len(varying); i += 2 {
		var parts []string
		for _, k := range varying[i:min(i+2, len(varying))] {
			parts = append(parts, k+"="+fmtParam(c.Params[k]))
		}
		lines = append(lines, strings.Join(parts, " "))
	}
	if len(lines) == 0 {
		return analyze.CaseLabel(c)
	}
	return strings.Join(lines, "\n")
}

func minPositive(xs []float64) float64 {
	m := math.Inf(1)
	for _, x := range xs {
		if x > 0 {
			m = math.Min(m, x)
		}
	}
	if math.IsInf(m, 1) {
		return 0
	}
	return m
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

// implOrder is the baseline, the other implementations in spec order, and
// the reference, each only when some case timed it.
func implOrder(r *result.Results) []string {
	var out []string
	add := func(n string) {
		if n == "" || slices.Contains(out, n) {
			return
		}
		for _, c := range r.Cases {
			if ir := c.Results[n]; ir != nil && ir.Timing != nil && ir.Timing.MedianMS > 0 {
				out = append(out, n)
				return
			}
		}
	}
	add(r.Baseline)
	for _, n := range r.Implementations {
		add(n)
	}
	add(result.Reference)
	return out
}

// where says which machine a run's figures come from, for titles.
func where(r *result.Results) string {
	if len(r.Env.GPUs) > 0 {
		return r.Env.GPUs[0].Name
	}
	if r.Env.CPU != "" {
		return "CPU (" + r.Env.CPU + ")"
	}
	return "CPU"
}

// point is one implementation at one case on a sweep figure.
type point struct{ x, y, lo, hi float64 }

// Sweep draws the run's median time per call (q1-q3 bars) and, when it
// compares implementations, their speedup over the baseline, against the
// swept parameter: dir/time.{png,svg} and dir/speedup.{png,svg}.
func Sweep(r *result.Results, dir string) ([]Figure, error) {
	if len(r.Cases) == 0 {
		return nil, fmt.Errorf("plot %s: the run has no cases", r.Experiment)
	}
	l := layoutOf(r)
	impls := implOrder(r)
	if len(impls) == 0 {
		return nil, fmt.Errorf("plot %s: no implementation was timed", r.Experiment)
	}
	var figs []Figure
	f, err := sweepFigure(r, l, impls, "time", dir)
	if err != nil {
		return nil, err
	}
	figs = append(figs, f)
	if len(r.Comparisons) > 0 {
		f, err := sweepFigure(r, l, impls, "speedup", dir)
		if err != nil {
			return nil, err
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func sweepFigure(r *result.Results, l layout, impls []string, kind, dir string) (Figure, error) {
	xlabel := l.x
	if l.x == "" {
		xlabel = "case"
	}
	var title, ylabel string
	if kind == "time" {
		title = fmt.Sprintf("%s: median time per call, q1-q3 bars\n%s, %s", r.Experiment, where(r), r.CreatedAt.UTC().Format("2006-01-02"))
		ylabel = "time per call (ms)"
	} else {
		title = fmt.Sprintf("%s: speedup over %s\n%s, %s", r.Experiment, r.Baseline, where(r), r.CreatedAt.UTC().Format("2006-01-02"))
		ylabel = "speedup over " + r.Baseline + " (x, higher is faster)"
	}
	p := newPlot(title, xlabel, ylabel)
	leg := newLegend()
	var all []float64
	var shown []string
	unconverged := false
	for ii, name := range impls {
		if kind == "speedup" && (name == r.Baseline || name == result.Reference) {
			continue
		}
		for gi := range l.groups {
			var pts []point
			var filled []bool
			for ci, c := range r.Cases {
				if l.group[ci] != gi {
					continue
				}
				x := l.xs[ci]
				if l.x == "" && len(impls) > 1 {
					// Dodge the implementations of a category apart.
					x += (float64(ii) - float64(len(impls)-1)/2) * 0.5 / float64(len(impls))
				}
				if kind == "time" {
					ir := c.Results[name]
					if ir == nil || ir.Timing == nil || ir.Timing.MedianMS <= 0 {
						continue
					}
					t := ir.Timing
					pts = append(pts, point{x, t.MedianMS, t.Q1MS, t.Q3MS})
					// Hollow: the median did not converge (noisy), as
					// the markdown table's \* says.
					filled = append(filled, t.Converged)
					if !t.Converged {
						unconverged = true
					}
					continue
				}
				cmp := comparisonOf(r, name, c)
				if cmp == nil || cmp.Speedup <= 0 {
					continue
				}
				lo, hi := speedupRange(r, name, c)
				pts = append(pts, point{x, cmp.Speedup, lo, hi})
				filled = append(filled, cmp.Verdict == result.VerdictFast || cmp.Verdict == result.VerdictSlow)
			}
			if len(pts) == 0 {
				continue
			}
			sort.Slice(pts, func(a, b int) bool { return pts[a].x < pts[b].x })
			for _, pt := range pts {
				all = append(all, pt.y, pt.lo, pt.hi)
			}
			if err := addSeries(p, pts, filled, colorOf(ii), gi, l.x != ""); err != nil {
				return Figure{}, err
			}
			if !slices.Contains(shown, name) {
				shown = append(shown, name)
				leg.add(name, swatch(colorOf(ii), 0, l.x != ""))
			}
		}
	}
	if len(shown) == 0 {
		return Figure{}, fmt.Errorf("plot %s: nothing to draw on the %s figure", r.Experiment, kind)
	}
	if len(l.groups) > 1 {
		for gi, g := range l.groups {
			leg.add(g, swatch(gray, gi, true))
		}
	}
	if kind == "time" && unconverged {
		leg.add("filled: converged", swatchGlyph(gray, true))
		leg.add("hollow: did not converge", swatchGlyph(gray, false))
		leg.add(" (a noisy median)", nil...)
	}
	if kind == "speedup" {
		one := plotter.NewFunction(func(float64) float64 { return 1 })
		one.Color, one.Width, one.Dashes = gray, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(one)
		all = append(all, 1)
		leg.add("filled: FAST/SLOW", swatchGlyph(gray, true))
		leg.add("hollow: SAME/AMBIGUOUS", swatchGlyph(gray, false))
		leg.add("(the verdict reads both", nil...)
		leg.add(" sides' q1-q3; the bars", nil...)
		leg.add(" span that range)", nil...)
	}
	lo, hi := minPositive(all), maxOf(all)
	if spansDecade(all) {
		p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, logTicks{}
		p.Y.Min, p.Y.Max = padLog(lo, hi, 1.25)
		p.Y.Label.Text += ", log scale"
	} else {
		if kind == "time" {
			lo = 0
		}
		p.Y.Min, p.Y.Max = padLin(lo, hi, 0.06)
		if kind == "time" {
			p.Y.Min = 0
		}
		p.Y.Tick.Marker = linTicks{}
	}
	if l.x != "" {
		xs := uniqueSorted(l.xs)
		p.X.Tick.Marker = valueTicks(xs)
		if l.logX {
			p.X.Scale = gplot.LogScale{}
			p.X.Min, p.X.Max = padLog(xs[0], xs[len(xs)-1], 1.15)
			p.X.Label.Text += ", log scale"
		} else {
			p.X.Min, p.X.Max = padLin(xs[0], xs[len(xs)-1], 0.05)
		}
	} else {
		var ticks []gplot.Tick
		for i, c := range l.categories {
			ticks = append(ticks, gplot.Tick{Value: float64(i), Label: c})
		}
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
		p.X.Min, p.X.Max = -0.6, float64(len(l.categories))-0.4
	}
	f, err := save(p, leg, dir, kind)
	f.Kind = kind
	return f, err
}

// comparisonOf is r's comparison of name with the baseline on case c.
func comparisonOf(r *result.Results, name string, c result.Case) *result.Comparison {
	label := analyze.CaseLabel(c)
	for i, cmp := range r.Comparisons {
		if cmp.A == name && cmp.B == r.Baseline && cmp.Label == label {
			return &r.Comparisons[i]
		}
	}
	return nil
}

// speedupRange is the spread a speedup's verdict looks at: from the
// baseline's q1 over the candidate's q3 to its q3 over the candidate's q1.
func speedupRange(r *result.Results, name string, c result.Case) (lo, hi float64) {
	cand, base := c.Results[name], c.Results[r.Baseline]
	if cand == nil || base == nil || cand.Timing == nil || base.Timing == nil {
		return 0, 0
	}
	ct, bt := analyze.OneClock(*cand.Timing, *base.Timing)
	if ct.Q1MS <= 0 || ct.Q3MS <= 0 {
		return 0, 0
	}
	return bt.Q1MS / ct.Q3MS, bt.Q3MS / ct.Q1MS
}

func uniqueSorted(xs []float64) []float64 {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

var gray = rgb(0x555555)

// addSeries draws one implementation's points of one group: a line (on a
// numeric axis), its glyphs (hollow where filled says so) and its bars.
func addSeries(p *gplot.Plot, pts []point, filled []bool, c color.Color, group int, line bool) error {
	xys := make(plotter.XYs, len(pts))
	var bars errs
	for i, pt := range pts {
		xys[i] = plotter.XY{X: pt.x, Y: pt.y}
		if pt.lo > 0 && pt.hi > 0 {
			bars.xys = append(bars.xys, xys[i])
			bars.errs = append(bars.errs, struct{ Low, High float64 }{Low: pt.y - pt.lo, High: pt.hi - pt.y})
		}
	}
	if line && len(pts) > 1 {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes[group%len(dashes)]
		p.Add(l)
	}
	if len(bars.xys) > 0 {
		eb, err := plotter.NewYErrorBars(bars)
		if err != nil {
			return err
		}
		eb.Color, eb.Width, eb.CapWidth = c, vg.Points(1), vg.Points(5)
		p.Add(eb)
	}
	for i, xy := range xys {
		s, err := plotter.NewScatter(plotter.XYs{xy})
		if err != nil {
			return err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3.2), Shape: glyphs[group%len(glyphs)]}
		if !filled[i] {
			s.GlyphStyle.Shape = hollow(s.GlyphStyle.Shape)
		}
		p.Add(s)
	}
	return nil
}

// errs adapts points and their errors to gonum's YErrorBars.
type errs struct {
	xys  plotter.XYs
	errs plotter.YErrors
}

func (e errs) Len() int                        { return len(e.xys) }
func (e errs) XY(i int) (float64, float64)     { return e.xys[i].X, e.xys[i].Y }
func (e errs) YError(i int) (float64, float64) { return e.errs[i].Low, e.errs[i].High }

// hollow is the outline version of a filled glyph.
func hollow(g draw.GlyphDrawer) draw.GlyphDrawer {
	switch g.(type) {
	case draw.CircleGlyph:
		return draw.RingGlyph{}
	case draw.BoxGlyph:
		return draw.SquareGlyph{}
	case draw.PyramidGlyph:
		return draw.TriangleGlyph{}
	}
	return g
}
