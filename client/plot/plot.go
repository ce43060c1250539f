// Package plot draws xrun's figures with gonum.org/v1/plot, each as a PNG
// and an SVG: an experiment's sweep (median time with its q1-q3 bars, and
// the speedup over the baseline, against the swept parameter, one line per
// implementation), its roofline (achieved FLOP/s against arithmetic
// intensity under the GPU's compute and bandwidth roofs), and a series'
// nightly trend with the regression rule's band and verdicts.
package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one figure written, as a PNG and an SVG.
type Figure struct {
	// Kind is "time", "speedup", "roofline" or "trend".
	Kind  string `json:"kind"`
	Title string `json:"title"`
	PNG   string `json:"png"`
	SVG   string `json:"svg"`
}

// Size and resolution of every figure: 9 x 5 inches, 150 dots per inch
// in the PNG (1350 x 750 pixels).
const (
	width  = 9 * vg.Inch
	height = 5 * vg.Inch
	dpi    = 150
)

// palette is Tableau 10: distinguishable, and readable by the common
// kinds of colour blindness in its first few entries.
var palette = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759), rgb(0x76b7b2), rgb(0x59a14f),
	rgb(0xedc948), rgb(0xb07aa1), rgb(0xff9da7), rgb(0x9c755f), rgb(0xbab0ac),
}

func rgb(v uint32) color.Color {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

func colorOf(i int) color.Color { return palette[i%len(palette)] }

// dashes and glyphs tell apart the groups of a sweep (039's chunk sizes).
var (
	dashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	glyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}}
)

// sans is the font variant of every text: Liberation Sans, which gonum
// embeds, reads better than its default serif at small sizes.
const sans = "Sans"

// titleWidth is the most characters a title line takes before it wraps:
// about the plotting area's width at the title's size, beside the legend.
const titleWidth = 64

// wrapTitle breaks each line of title longer than width after the last
// ", " that keeps it within width (a line without one stays as it is).
func wrapTitle(title string, width int) string {
	var out []string
	for _, line := range strings.Split(title, "\n") {
		for len(line) > width {
			cut := strings.LastIndex(line[:width], ", ")
			if cut <= 0 {
				break
			}
			out = append(out, line[:cut+1])
			line = line[cut+2:]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// newPlot is a plot with xrun's text sizes and a light grid.
func newPlot(title, xlabel, ylabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = wrapTitle(title, titleWidth)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.TextStyle.Font.Variant = sans
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	for _, a := range []*gplot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(11)
		a.Tick.Label.Font.Size = vg.Points(9.5)
		a.Label.TextStyle.Font.Variant, a.Tick.Label.Font.Variant = sans, sans
		a.Padding = vg.Points(4)
	}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	g.Vertical.Width, g.Horizontal.Width = vg.Points(0.5), vg.Points(0.5)
	p.Add(g)
	return p
}

// legend is a legend drawn beside the plot, right of its data area, so
// that it never covers a point.
type legend struct {
	l     gplot.Legend
	texts []string
}

func newLegend() *legend {
	l := gplot.NewLegend()
	l.TextStyle.Font.Size = vg.Points(9.5)
	l.TextStyle.Font.Variant = sans
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(22)
	l.Padding = vg.Points(1.5)
	return &legend{l: l}
}

func (g *legend) add(name string, thumbs ...gplot.Thumbnailer) {
	g.l.Add(name, thumbs...)
	g.texts = append(g.texts, name)
}

// width is the room the legend needs.
func (g *legend) width() vg.Length {
	w := vg.Length(0)
	for _, n := range g.texts {
		w = max(w, g.l.TextStyle.Width(n))
	}
	if w == 0 {
		return 0
	}
	return w + g.l.ThumbnailWidth + vg.Points(22)
}

// save draws p, with legend g in a column on its right, into
// dir/name.png and dir/name.svg.
func save(p *gplot.Plot, g *legend, dir, name string) (fig Figure, err error) {
	// gonum panics on figures it cannot scale (a value of 0 on a log
	// axis, a range that overflows): that is one figure that cannot be
	// drawn, not a crash of the command.
	defer func() {
		if v := recover(); v != nil {
			fig, err = Figure{}, fmt.Errorf("draw figure %s: %v", name, v)
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Figure{}, fmt.Errorf("write figure %s: %w", name, err)
	}
	f := Figure{Title: p.Title.Text, PNG: filepath.Join(dir, name+".png"), SVG: filepath.Join(dir, name+".svg")}
	lw := vg.Length(0)
	if g != nil {
		lw = g.width()
	}
	// gonum sizes a log axis' label as if centred on the arithmetic
	// middle of the range, and shrinks the plot for a long one: xrun
	// keeps the label's room and draws the text itself, centred.
	xlabel, ylabel := p.X.Label.Text, p.Y.Label.Text
	_, logX := p.X.Scale.(gplot.LogScale)
	_, logY := p.Y.Scale.(gplot.LogScale)
	if logX && xlabel != "" {
		p.X.Label.Text = " "
		defer func() { p.X.Label.Text = xlabel }()
	}
	if logY && ylabel != "" {
		p.Y.Label.Text = " "
		defer func() { p.Y.Label.Text = ylabel }()
	}
	drawTo := func(c vg.CanvasSizer) {
		dc := draw.New(c)
		dc.SetColor(color.White) // the legend's column too, for dark viewers
		dc.Fill(dc.Rectangle.Path())
		plotArea := draw.Crop(dc, 0, -lw, 0, 0)
		p.Draw(plotArea)
		da := p.DataCanvas(plotArea)
		if p.X.Label.Text == " " {
			sty := p.X.Label.TextStyle
			sty.YAlign = draw.YBottom
			plotArea.FillText(sty, vg.Point{X: da.Center().X, Y: plotArea.Min.Y + sty.FontExtents().Descent}, xlabel)
		}
		if p.Y.Label.Text == " " {
			// As gonum's vertical axis draws it: a quarter turn, centred.
			sty := p.Y.Label.TextStyle
			sty.Rotation += math.Pi / 2
			x := plotArea.Min.X + sty.Height(" ") - sty.FontExtents().Descent
			plotArea.FillText(sty, vg.Point{X: x, Y: da.Center().Y}, ylabel)
		}
		if lw > 0 {
			side := draw.Crop(dc, width-lw+vg.Points(10), 0, 0, -p.Title.TextStyle.Height(p.Title.Text)-p.Title.Padding-vg.Points(6))
			g.l.Draw(side)
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(dpi))
	drawTo(img)
	if err := writeTo(f.PNG, vgimg.PngCanvas{Canvas: img}); err != nil {
		return f, err
	}
	svg := vgsvg.NewWith(vgsvg.UseWH(width, height))
	drawTo(svg)
	if err := writeTo(f.SVG, svg); err != nil {
		return f, err
	}
	return f, nil
}

// writeTo writes a drawn canvas to path atomically (temp file, rename).
func writeTo(path string, c io.WriterTo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write figure: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := c.WriteTo(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write figure %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write figure %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write figure %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write figure %s: %w", path, err)
	}
	return nil
}

// FileName makes s safe as a file name: letters, digits, '.', '-' and '_'.
func FileName(s string) string {
	s = unsafeName.ReplaceAllString(s, "_")
	return strings.Trim(s, "_")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// logTicks marks a log axis at 1, 2 and 5 times the powers of ten in its
// range (every power of ten when the range spans more than three decades),
// with minor ticks between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []gplot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	steps := []float64{1, 2, 3, 5}
	switch span := math.Log10(hi / lo); {
	case span > 3:
		steps = []float64{1}
	case span > 2:
		steps = []float64{1, 2, 5}
	}
	var ticks []gplot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := float64(m) * base
			if v < lo*0.999 || v > hi*1.001 {
				continue
			}
			t := gplot.Tick{Value: v}
			for _, s := range steps {
				if float64(m) == s {
					t.Label = fmtNum(v)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// fmtNum writes a tick value briefly: 0.05, 0.3 (not 0.30000000000000004),
// 2, 1000, 1e+06.
func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1e5 || a < 1e-3:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	// Twelve significant digits drop the binary noise of m x 10^e.
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// linTicks marks a linear axis at a round step (1, 2, 2.5 or 5 times a
// power of ten) that gives four to eight labels, with labels of as many
// decimals as the step needs.
type linTicks struct{}

func (linTicks) Ticks(lo, hi float64) []gplot.Tick {
	if hi <= lo {
		return nil
	}
	raw := (hi - lo) / 6
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if step/math.Pow(10, math.Floor(math.Log10(step))) == 2.5 {
		decimals++
	}
	var ticks []gplot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		if half := v + step/2; half < hi {
			ticks = append(ticks, gplot.Tick{Value: half})
		}
	}
	return ticks
}

// valueTicks marks an axis at the given values only (the sweep's T values
// on a log axis), labelled as they are.
type valueTicks []float64

func (vs valueTicks) Ticks(lo, hi float64) []gplot.Tick {
	var ticks []gplot.Tick
	for _, v := range vs {
		if v >= lo*0.999 && v <= hi*1.001 {
			ticks = append(ticks, gplot.Tick{Value: v, Label: fmtNum(v)})
		}
	}
	return ticks
}

// spansDecade reports whether positive values spread over a factor of
// ten or more, where a log axis reads better.
func spansDecade(vs []float64) bool {
	lo, hi := math.Inf(1), 0.0
	for _, v := range vs {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	return hi > 0 && hi/lo >= 10
}

// padLog widens [lo, hi] by a factor f on each side (a log axis).
func padLog(lo, hi, f float64) (float64, float64) { return lo / f, hi * f }

// padLin widens [lo, hi] by a fraction f of its width on each side.
func padLin(lo, hi, f float64) (float64, float64) {
	d := (hi - lo) * f
	if d == 0 {
		d = math.Abs(hi) * f
		if d == 0 {
			d = 1
		}
	}
	return lo - d, hi + d
}

// thumb is a legend thumbnail: a short line in a group's dash pattern
// and its glyph, or the glyph alone.
type thumb struct {
	c      color.Color
	group  int
	line   bool
	filled bool
}

// swatch is the thumbnail of an implementation's colour (group 0) or of a
// group's dash pattern and glyph (in gray).
func swatch(c color.Color, group int, line bool) gplot.Thumbnailer {
	return thumb{c: c, group: group, line: line, filled: true}
}

// swatchGlyph is a glyph alone, filled or hollow.
func swatchGlyph(c color.Color, filled bool) gplot.Thumbnailer { return thumb{c: c, filled: filled} }

func (t thumb) Thumbnail(c *draw.Canvas) {
	y := (c.Min.Y + c.Max.Y) / 2
	if t.line {
		c.StrokeLine2(draw.LineStyle{Color: t.c, Width: vg.Points(1.5), Dashes: dashes[t.group%len(dashes)]}, c.Min.X, y, c.Max.X, y)
	}
	g := glyphs[t.group%len(glyphs)]
	if !t.filled {
		g = hollow(g)
	}
	c.DrawGlyph(draw.GlyphStyle{Color: t.c, Radius: vg.Points(3.2), Shape: g}, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: y})
}
