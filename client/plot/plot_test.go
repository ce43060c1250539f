package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/regress"
	"github.com/xrun-dev/xrun/result"
)

// out is where a test writes its figures: XRUN_PLOT_OUT to look at them,
// else a temporary directory.
func out(t *testing.T, name string) string {
	if d := os.Getenv("XRUN_PLOT_OUT"); d != "" {
		return filepath.Join(d, name)
	}
	return t.TempDir()
}

func committed(t *testing.T, exp, run string) *result.Results {
	t.Helper()
	r, err := result.ReadFile(filepath.Join("..", "..", "experiments", exp, "results", run, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkFigure checks that a figure's PNG decodes at the expected size and
// that its SVG is one.
func checkFigure(t *testing.T, f Figure) {
	t.Helper()
	data, err := os.ReadFile(f.PNG)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", f.PNG, err)
	}
	if b := img.Bounds(); b.Dx() != 1350 || b.Dy() != 750 {
		t.Errorf("%s is %dx%d", f.PNG, b.Dx(), b.Dy())
	}
	svg, err := os.ReadFile(f.SVG)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("%s: %v", f.SVG, err)
	}
}

func TestSweepCommittedRuns(t *testing.T) {
	for _, c := range []struct {
		exp, run, x string
		groups      int
	}{
		{"039-gla-pingpong", "2026-11-22-h100", "T", 2},
		{"058-projection-chain-forward", "2026-11-22-h100", "T", 2},
		{"dual-gemm-small-m", "2026-11-22-h100", "M", 1},
		{"flash-attention-wmma", "2026-11-22-h100", "", 1},
	} {
		t.Run(c.exp, func(t *testing.T) {
			r := committed(t, c.exp, c.run)
			l := layoutOf(r)
			if l.x != c.x || len(l.groups) != c.groups {
				t.Errorf("layout: x %q, groups %q", l.x, l.groups)
			}
			figs, err := Sweep(r, out(t, c.exp))
			if err != nil {
				t.Fatal(err)
			}
			if len(figs) != 2 || figs[0].Kind != "time" || figs[1].Kind != "speedup" {
				t.Fatalf("figures %+v", figs)
			}
			for _, f := range figs {
				checkFigure(t, f)
				if !strings.Contains(f.Title, r.Experiment) {
					t.Errorf("title %q", f.Title)
				}
			}
		})
	}
}

func TestRooflineCommittedRuns(t *testing.T) {
	for _, exp := range []string{"039-gla-pingpong", "058-projection-chain-forward", "dual-gemm-small-m", "flash-attention-wmma"} {
		t.Run(exp, func(t *testing.T) {
			f, err := Roofline(committed(t, exp, "2026-11-22-h100"), out(t, exp))
			if err != nil {
				t.Fatal(err)
			}
			checkFigure(t, f)
		})
	}
	cpu := &result.Results{Experiment: "x", Cases: []result.Case{{}}}
	if _, err := Roofline(cpu, t.TempDir()); !errors.Is(err, ErrNoRoofline) {
		t.Errorf("roofline of a CPU run: %v", err)
	}
}

// A synthetic series: 12 quiet nights, a spike, 6 more, a 15 % step
// confirmed the next night, then a change point that accepts it.
func TestTrend(t *testing.T) {
	start := time.Date(2026, 1, 1, 2, 17, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []regress.Value
	for i := 0; i < 30; i++ {
		m := 0.200 * (1 + 0.008*rng.NormFloat64())
		switch {
		case i == 13:
			m *= 1.2
		case i >= 20:
			m *= 1.15
		}
		v := regress.Value{Run: fmt.Sprintf("n%d", i), At: start.Add(time.Duration(i) * 24 * time.Hour), MedianMS: m, Q1MS: m * 0.995, Q3MS: m * 1.006}
		if i == 8 {
			v.Noisy = "did not converge"
		}
		if i == 25 {
			v.ChangePoint = true
		}
		vals = append(vals, v)
	}
	ru := regress.Default()
	vs := ru.Walk(vals)
	tr := Trend{Title: "synthetic · fused · T=1024", Machine: "NVIDIA H100 80GB HBM3 on gpu-box", Rule: ru}
	for i, v := range vals {
		tr.Points = append(tr.Points, TrendPoint{Run: v.Run, At: v.At, MedianMS: v.MedianMS, Q1MS: v.Q1MS, Q3MS: v.Q3MS, Verdict: vs[i], ChangePoint: v.ChangePoint})
	}
	f, err := TrendFigure(tr, out(t, "trend"), "trend")
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, f)
	if vs[20].Status != regress.Regressed || vs[13].Status != regress.Suspect {
		t.Errorf("verdicts: step %+v, spike %+v", vs[20], vs[13])
	}
}

// 5000 runs, a year and a half of them: a figure with a dozen dated ticks
// (XRUN_PLOT_OUT keeps it to look at).
func TestTrendOfManyRuns(t *testing.T) {
	start := time.Date(2025, 6, 1, 2, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(5, 6))
	var vals []regress.Value
	for i := 0; i < 5000; i++ {
		m := 0.200 * (1 + 0.01*rng.NormFloat64())
		vals = append(vals, regress.Value{Run: fmt.Sprintf("r%d", i), At: start.Add(time.Duration(i) * 3 * time.Hour), MedianMS: m, Q1MS: m * 0.995, Q3MS: m * 1.005})
	}
	ru := regress.Default()
	vs := ru.Walk(vals)
	tr := Trend{Title: "synthetic · 5000 runs", Machine: "NVIDIA H200", Rule: ru}
	for i, v := range vals {
		tr.Points = append(tr.Points, TrendPoint{Run: v.Run, At: v.At, MedianMS: v.MedianMS, Q1MS: v.Q1MS, Q3MS: v.Q3MS, Verdict: vs[i]})
	}
	f, err := TrendFigure(tr, out(t, "trend-many"), "trend")
	if err != nil {
		t.Fatal(err)
	}
	checkFigure(t, f)
}

// A title line wider than the plot wraps after a comma; a short one stays.
func TestWrapTitle(t *testing.T) {
	long := "NVIDIA H200, driver 580, CUDA 13, python 3.12.3, torch 2.11.0+cu130, triton 3.6.0, numpy 2.5.2, max 1980 MHz, 700 W"
	got := wrapTitle("demo · slowed · T=1024\n"+long, 64)
	want := "demo · slowed · T=1024\nNVIDIA H200, driver 580, CUDA 13, python 3.12.3,\ntorch 2.11.0+cu130, triton 3.6.0, numpy 2.5.2, max 1980 MHz,\n700 W"
	if got != want {
		t.Errorf("wrapTitle:\n%s\nwant\n%s", got, want)
	}
	if got := wrapTitle("short, title", 64); got != "short, title" {
		t.Errorf("short title became %q", got)
	}
}

// Runs minutes apart are labelled to the second when their minutes repeat,
// with the day on the axis; runs nights apart by date, with the year; and
// 5000 runs get a tick per label, not one per run (which merged into a
// black bar).
func TestRunTicks(t *testing.T) {
	labels := func(pts []TrendPoint) ([]string, int, string) {
		var out []string
		ticks, axis := runTicks(pts)
		for _, tk := range ticks.Ticks(0, 0) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out, len(ticks), axis
	}
	start := time.Date(2026, 11, 25, 23, 3, 10, 0, time.UTC)
	var quick, nightly, years []TrendPoint
	for i := 0; i < 4; i++ {
		quick = append(quick, TrendPoint{At: start.Add(time.Duration(i) * 25 * time.Second)})
		nightly = append(nightly, TrendPoint{At: start.Add(time.Duration(i) * 24 * time.Hour)})
	}
	for i := 0; i < 5000; i++ {
		years = append(years, TrendPoint{At: start.Add(time.Duration(i) * 6 * time.Hour)})
	}
	if got, _, axis := labels(quick); strings.Join(got, " ") != "23:03:10 23:03:35 23:04:00 23:04:25" || axis != "run (time on 2026-11-25, UTC)" {
		t.Errorf("runs seconds apart: %s, axis %q", got, axis)
	}
	if got, n, axis := labels(nightly); strings.Join(got, " ") != "2026-11-25 2026-11-26 2026-11-27 2026-11-28" || n != 4 || axis != "run (date, UTC)" {
		t.Errorf("nightly runs: %s (%d ticks), axis %q", got, n, axis)
	}
	if got, n, _ := labels(years); len(got) > 6 || n != len(got) || got[0] != "2026-11-25" {
		t.Errorf("5000 runs: %d ticks, labels %v", n, got)
	}
}

// The roofline's legend shows a bound's glyph only when a point has it.
func TestRooflineLegendBounds(t *testing.T) {
	mem := []roofPoint{{bound: result.BoundMemory}, {bound: result.BoundMemory}}
	if got := boundsUsed(mem); len(got) != 1 || got[0] != result.BoundMemory {
		t.Errorf("memory-bound points: %v", got)
	}
	both := append(mem, roofPoint{bound: result.BoundCompute})
	if got := boundsUsed(both); len(got) != 2 {
		t.Errorf("both: %v", got)
	}
}

// The time figure draws a median that did not converge hollow and says
// so in its legend; a run whose medians all converged has no such entry.
func TestSweepMarksUnconverged(t *testing.T) {
	r := committed(t, "039-gla-pingpong", "2026-11-22-h100")
	legend := func(r *result.Results, dir string) bool {
		t.Helper()
		figs, err := Sweep(r, dir)
		if err != nil {
			t.Fatal(err)
		}
		checkFigure(t, figs[0])
		svg, err := os.ReadFile(figs[0].SVG)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Contains(svg, []byte("hollow: did not converge"))
	}
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if ir.Timing != nil {
				ir.Timing.Converged = true
			}
		}
	}
	if legend(r, out(t, "converged")) {
		t.Error("a run whose medians converged says some did not")
	}
	r.Cases[0].Results["pipelined"].Timing.Converged = false
	if !legend(r, out(t, "unconverged")) {
		t.Error("an unconverged median is not marked")
	}
}
