package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
)

// ErrNoRoofline says a run cannot have a roofline: no GPU the peaks table
// knows (a CPU run), or no case with both a FLOP and a byte model.
var ErrNoRoofline = errors.New("no roofline")

// roofPoint is one implementation at one case on the roofline.
type roofPoint struct {
	impl      string
	intensity float64 // FLOP per byte
	tflops    float64 // achieved
	bound     string
}

// Roofline draws where each implementation's calls sit under the GPU's
// roofs: the arithmetic intensity of its work model against the FLOP/s it
// achieved, the compute roof (dense peak for the cases' dtype) and the
// memory roof (bandwidth x intensity), the ridge point where they meet,
// and each point's side of it (dir/roofline.{png,svg}). It returns an
// error wrapping ErrNoRoofline when the run has no roofline to draw.
func Roofline(r *result.Results, dir string) (Figure, error) {
	if len(r.Env.GPUs) == 0 {
		return Figure{}, fmt.Errorf("%w: %s ran without a GPU", ErrNoRoofline, r.Experiment)
	}
	gpu := &r.Env.GPUs[0]
	roofs := map[string]analyze.Roof{}
	var pts []roofPoint
	for _, c := range r.Cases {
		dtype, _ := c.Params["dtype"].(string)
		roof, ok := analyze.RoofFor(gpu, dtype)
		if !ok {
			continue
		}
		for _, name := range implOrder(r) {
			ir := c.Results[name]
			if ir == nil || ir.Timing == nil || ir.Timing.MedianMS <= 0 {
				continue
			}
			m := result.Model{Flops: c.Flops, Bytes: c.Bytes}
			if ir.Model != nil {
				m = *ir.Model
			}
			if m.Flops <= 0 || m.Bytes <= 0 {
				continue
			}
			ai := m.Flops / m.Bytes
			pts = append(pts, roofPoint{impl: name, intensity: ai, tflops: m.Flops / (ir.Timing.MedianMS / 1e3) / 1e12, bound: roof.Bound(ai)})
			roofs[roof.Dtype] = roof
		}
	}
	if len(pts) == 0 {
		return Figure{}, fmt.Errorf("%w: no case of %s has a FLOP and a byte model on a GPU the peaks table knows (%s)", ErrNoRoofline, r.Experiment, gpu.Name)
	}
	var dtypes []string
	for d := range roofs {
		dtypes = append(dtypes, d)
	}
	sort.Strings(dtypes)
	first := roofs[dtypes[0]]

	var peaks []string
	for _, d := range dtypes {
		peaks = append(peaks, fmt.Sprintf("%s %s TFLOP/s", d, fmtNum(roofs[d].PeakTFLOPS)))
	}
	title := fmt.Sprintf("%s: roofline on %s, %s\ndense peak %s; memory %s GB/s", r.Experiment, gpu.Name,
		r.CreatedAt.UTC().Format("2006-01-02"), strings.Join(peaks, ", "), fmtNum(first.PeakGBps))
	p := newPlot(title, "arithmetic intensity (FLOP per byte of device memory traffic), log scale", "achieved TFLOP/s, log scale")
	p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, logTicks{}
	p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, logTicks{}

	xlo, xhi, ylo := math.Inf(1), 0.0, math.Inf(1)
	yhi := 0.0
	for _, pt := range pts {
		xlo, xhi = math.Min(xlo, pt.intensity), math.Max(xhi, pt.intensity)
		ylo = math.Min(ylo, pt.tflops)
	}
	for _, rf := range roofs {
		xlo, xhi = math.Min(xlo, rf.Ridge()), math.Max(xhi, rf.Ridge())
		yhi = math.Max(yhi, rf.PeakTFLOPS)
	}
	p.X.Min, p.X.Max = xlo/4, xhi*4
	p.Y.Min, p.Y.Max = math.Min(ylo, first.Attainable(p.X.Min))/2, yhi*2.5

	roofStyle := draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(2)}
	var labels plotter.XYLabels
	var aligns []text.XAlignment
	for i, d := range dtypes {
		rf := roofs[d]
		ridge := rf.Ridge()
		mem, _ := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: rf.Attainable(p.X.Min)}, {X: ridge, Y: rf.PeakTFLOPS}})
		mem.LineStyle = roofStyle
		comp, _ := plotter.NewLine(plotter.XYs{{X: ridge, Y: rf.PeakTFLOPS}, {X: p.X.Max, Y: rf.PeakTFLOPS}})
		comp.LineStyle = roofStyle
		comp.Dashes = dashes[i%len(dashes)]
		ridgeLine, _ := plotter.NewLine(plotter.XYs{{X: ridge, Y: p.Y.Min}, {X: ridge, Y: rf.PeakTFLOPS}})
		ridgeLine.LineStyle = draw.LineStyle{Color: color.Gray{Y: 110}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(3)}}
		p.Add(mem, comp, ridgeLine)
		// The ridge's label ends left of it, at the bottom.
		labels.XYs = append(labels.XYs, plotter.XY{X: ridge / 1.08, Y: p.Y.Min * 1.25})
		labels.Labels = append(labels.Labels, fmt.Sprintf("ridge %s FLOP/B", fmtNum(math.Round(ridge))))
		aligns = append(aligns, text.XRight)
		// The compute roof's starts right of the ridge, above the roof.
		labels.XYs = append(labels.XYs, plotter.XY{X: ridge * 1.12, Y: rf.PeakTFLOPS * 1.12})
		labels.Labels = append(labels.Labels, d+" compute roof")
		aligns = append(aligns, text.XLeft)
	}
	// The memory roof's label ends above its line, short of the first
	// ridge: the line falls to the left, away from the text.
	at := first.Ridge() / 1.5
	labels.XYs = append(labels.XYs, plotter.XY{X: at, Y: first.Attainable(at) * 1.3})
	labels.Labels = append(labels.Labels, "memory roof")
	aligns = append(aligns, text.XRight)
	lb, err := plotter.NewLabels(labels)
	if err != nil {
		return Figure{}, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Size, lb.TextStyle[i].Font.Variant = vg.Points(9.5), sans
		lb.TextStyle[i].Color = color.Gray{Y: 40}
		lb.TextStyle[i].XAlign = aligns[i]
	}
	p.Add(lb)

	leg := newLegend()
	var impls []string
	for _, pt := range pts {
		if !slices.Contains(impls, pt.impl) {
			impls = append(impls, pt.impl)
		}
	}
	for ii, name := range impls {
		// One case's implementations share its intensity: they are spread
		// sideways over ±6 % so that none hides another.
		dodge := 1.0
		if n := len(impls); n > 1 {
			dodge = math.Pow(1.06, (float64(ii)-float64(n-1)/2)/(float64(n-1)/2))
		}
		for _, bound := range []string{result.BoundMemory, result.BoundCompute} {
			var xys plotter.XYs
			for _, pt := range pts {
				if pt.impl == name && pt.bound == bound {
					xys = append(xys, plotter.XY{X: pt.intensity * dodge, Y: pt.tflops})
				}
			}
			if len(xys) == 0 {
				continue
			}
			s, err := plotter.NewScatter(xys)
			if err != nil {
				return Figure{}, err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: colorOf(ii), Radius: vg.Points(3.6), Shape: boundGlyph(bound)}
			p.Add(s)
		}
		leg.add(name, swatchGlyph(colorOf(ii), true))
	}
	for _, b := range boundsUsed(pts) {
		leg.add(b+"-bound", thumb{c: gray, group: boundGroup(b), filled: true})
	}
	leg.add("(the work model's intensity", nil...)
	leg.add(" against the ridge; a case's", nil...)
	leg.add(" points spread ±6% sideways)", nil...)
	f, err := save(p, leg, dir, "roofline")
	f.Kind = "roofline"
	return f, err
}

// boundsUsed are the bounds some point has, memory first: the legend
// shows only the glyphs the figure uses.
func boundsUsed(pts []roofPoint) []string {
	var out []string
	for _, b := range []string{result.BoundMemory, result.BoundCompute} {
		if slices.ContainsFunc(pts, func(pt roofPoint) bool { return pt.bound == b }) {
			out = append(out, b)
		}
	}
	return out
}

// boundGlyph is a circle for a memory-bound point, a triangle for a
// compute-bound one; boundGroup the group index with that glyph.
func boundGlyph(bound string) draw.GlyphDrawer { return glyphs[boundGroup(bound)] }

func boundGroup(bound string) int {
	if bound == result.BoundCompute {
		return 1
	}
	return 0
}
