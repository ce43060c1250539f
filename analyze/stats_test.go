package analyze

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestSummarizeKnownValues(t *testing.T) {
	// Expected values from Python: statistics.quantiles(method="inclusive")
	// (numpy's linear method), statistics.mean and statistics.stdev.
	x := []float64{3.1, 1.2, 5.5, 2.2, 4.8, 2.9, 3.3, 10.0, 2.5, 3.0}
	got := Summarize(x)
	want := result.Timing{
		MedianMS: 3.05, MeanMS: 3.85, MinMS: 1.2, MaxMS: 10.0,
		Q1MS: 2.6, Q3MS: 4.425, P20MS: 2.44, P80MS: 4.94,
		StdevMS: 2.4833892611151844, StderrRel: 0.2760171160412062, Samples: 10,
	}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"median", got.MedianMS, want.MedianMS}, {"mean", got.MeanMS, want.MeanMS},
		{"min", got.MinMS, want.MinMS}, {"max", got.MaxMS, want.MaxMS},
		{"q1", got.Q1MS, want.Q1MS}, {"q3", got.Q3MS, want.Q3MS},
		{"p20", got.P20MS, want.P20MS}, {"p80", got.P80MS, want.P80MS},
		{"stdev", got.StdevMS, want.StdevMS}, {"stderr_rel", got.StderrRel, want.StderrRel},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if got.Samples != 10 || got.Converged || got.StopReason != "" || got.Rounds != 0 || got.TotalS != 0 {
		t.Errorf("Summarize set fields it should leave alone or miscounted: %+v", got)
	}
	if x[0] != 3.1 || x[7] != 10.0 {
		t.Errorf("Summarize reordered its input: %v", x)
	}
}

func TestKeep(t *testing.T) {
	x := make([]float64, 1000)
	for i := range x {
		x[i] = float64(i)
	}
	kept := Keep(x, 64)
	if len(kept) != 64 || kept[0] != 0 || kept[63] != 999 || !slices.IsSorted(kept) {
		t.Errorf("Keep(1000 rising, 64) = %v", kept)
	}
	for i := 1; i < len(kept); i++ {
		if d := kept[i] - kept[i-1]; d < 15 || d > 16 {
			t.Fatalf("Keep spaced %v and %v unevenly", kept[i-1], kept[i])
		}
	}
	short := []float64{3, 1, 2}
	if got := Keep(short, 64); !slices.Equal(got, short) || &got[0] == &short[0] {
		t.Errorf("Keep of 3 samples = %v, want a copy of all in order", got)
	}
	if got := Summarize(x).KeptSamplesMS; !slices.Equal(got, kept) {
		t.Errorf("Summarize kept %v", got)
	}
}

func TestSummarizeSmall(t *testing.T) {
	if got := Summarize(nil); !reflect.DeepEqual(got, result.Timing{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
	one := Summarize([]float64{2.5})
	if one.MedianMS != 2.5 || one.Q1MS != 2.5 || one.P80MS != 2.5 || one.StdevMS != 0 || one.StderrRel != 0 || one.Samples != 1 {
		t.Errorf("Summarize([2.5]) = %+v", one)
	}
	two := Summarize([]float64{1, 3})
	if two.MedianMS != 2 || two.Q1MS != 1.5 || two.Q3MS != 2.5 || !near(two.StdevMS, math.Sqrt2, 1e-12) {
		t.Errorf("Summarize([1 3]) = %+v", two)
	}
	zero := Summarize([]float64{0, 0, 0})
	if zero.StderrRel != 0 || math.IsNaN(zero.StderrRel) {
		t.Errorf("stderr_rel of zero timings = %v, want 0", zero.StderrRel)
	}
}

func TestQuantile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5}
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {1, 5}, {0.5, 3}, {0.25, 2}, {0.1, 1.4}, {0.9, 4.6}, {-1, 1}, {2, 5},
	} {
		if got := Quantile(x, c.p); !near(got, c.want, 1e-12) {
			t.Errorf("Quantile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("Quantile of no samples is not NaN")
	}
}

// On normal samples the order-statistic estimate agrees with the asymptotic
// standard error of the median, sqrt(pi/2)*sd/sqrt(n).
func TestMedianSENormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	x := make([]float64, n)
	for i := range x {
		x[i] = 10 + rng.NormFloat64()
	}
	got := MedianSE(sorted(x))
	want := math.Sqrt(math.Pi/2) / math.Sqrt(n)
	if math.Abs(got-want)/want > 0.1 {
		t.Errorf("MedianSE = %v, want about %v", got, want)
	}
	if se := MeanSE(x); math.Abs(se-1/math.Sqrt(n))/(1/math.Sqrt(n)) > 0.05 {
		t.Errorf("MeanSE = %v, want about %v", se, 1/math.Sqrt(n))
	}
}

// A few huge outliers inflate the standard error of the mean but barely move
// that of the median: the reason stderr_rel is of the median.
func TestMedianSERobustToOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 1000)
	for i := range x {
		x[i] = 1 + 0.01*rng.NormFloat64()
	}
	clean := MedianSE(sorted(x))
	for i := 0; i < 10; i++ {
		x[i*97] = 100
	}
	dirty := MedianSE(sorted(x))
	if dirty > 1.2*clean {
		t.Errorf("median SE went from %v to %v with 1%% outliers", clean, dirty)
	}
	if mse := MeanSE(x); mse < 10*dirty {
		t.Errorf("mean SE %v is not much larger than median SE %v with outliers", mse, dirty)
	}
	if !math.IsNaN(MedianSE([]float64{1})) || !math.IsNaN(MeanSE([]float64{1})) {
		t.Error("standard errors of one sample are not NaN")
	}
}

func constant(n int, v float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = v
	}
	return x
}

func noisy(n int, rel float64) []float64 {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 + rel*rng.NormFloat64()
	}
	return x
}

func TestRuleCheck(t *testing.T) {
	r := DefaultStoppingRule()
	for _, c := range []struct {
		name                string
		samples             []float64
		measuredS, sampledS float64
		stop, ok            bool
		reason              string
	}{
		{"no samples", nil, 0, 0, false, false, ""},
		{"tight but too few samples", constant(9, 1), 1, 2, false, false, ""},
		{"tight but too little time", constant(50, 1), 0.25, 0.25, false, false, ""},
		{"tight after minimums", constant(10, 1), 0.5, 0.6, true, true, ReasonConverged},
		// A 6.7 us kernel: 3000 samples are 0.02 s of its own time but took
		// 0.6 s to take; the minimum is on the latter.
		{"short kernel, sampled long enough", noisy(3000, 0.01), 0.02, 0.6, true, true, ReasonConverged},
		{"short kernel, sampled too briefly", noisy(3000, 0.01), 0.02, 0.2, false, false, ""},
		{"noisy, time left", noisy(100, 0.5), 2, 3, false, false, ""},
		{"noisy at time cap", noisy(100, 0.5), 15, 20, true, false, ReasonMaxTime},
		{"noisy at sample cap", noisy(100000, 5), 14, 20, true, false, ReasonMaxSamples},
		{"converged at the cap wins", constant(100, 1), 20, 30, true, true, ReasonConverged},
		{"cap before minimums", constant(5, 1), 15, 20, true, false, ReasonMaxTime},
		// A sub-microsecond kernel fills the sample cap before min_time_s of
		// sampling with an error far below the target: that converged.
		{"tight at the sample cap before min time", constant(100000, 1), 0.08, 0.3, true, true, ReasonConverged},
		{"noisy at the sample cap before min time", noisy(100000, 5), 0.08, 0.3, true, false, ReasonMaxSamples},
		{"zero median never converges", constant(20, 0), 1, 2, false, false, ""},
		{"slightly noisy converges", noisy(2000, 0.05), 1, 2, true, true, ReasonConverged},
	} {
		t.Run(c.name, func(t *testing.T) {
			stop, ok, reason := r.Check(c.samples, c.measuredS, c.sampledS)
			if stop != c.stop || ok != c.ok || reason != c.reason {
				t.Errorf("Check = (%v, %v, %q), want (%v, %v, %q)", stop, ok, reason, c.stop, c.ok, c.reason)
			}
		})
	}
}

func TestRuleFrom(t *testing.T) {
	for _, c := range []struct {
		name string
		m    spec.Method
		want StoppingRule
	}{
		{"defaults", spec.Method{}, DefaultStoppingRule()},
		{"overrides", spec.Method{MinSamples: 20, MaxSamples: 500, MinTimeS: 1, MaxTimeS: 30, TargetRSE: 0.01},
			StoppingRule{MinSamples: 20, MaxSamples: 500, MinTimeS: 1, MaxTimeS: 30, TargetRSE: 0.01}},
		{"partial", spec.Method{MaxTimeS: 2},
			StoppingRule{MinSamples: 10, MaxSamples: 100000, MinTimeS: 0.3, MaxTimeS: 2, TargetRSE: 0.005}},
		{"caps raised to minimums", spec.Method{MinSamples: 200, MaxSamples: 0, MinTimeS: 20},
			StoppingRule{MinSamples: 200, MaxSamples: 100000, MinTimeS: 20, MaxTimeS: 20, TargetRSE: 0.005}},
	} {
		if got := StoppingRuleFrom(c.m); got != c.want {
			t.Errorf("%s: RuleFrom = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestRuleString(t *testing.T) {
	s := DefaultStoppingRule().String()
	for _, part := range []string{"10 samples", "0.3 s of sampling", "0.5%", "15 s of measured time", "100000 samples", "median"} {
		if !strings.Contains(s, part) {
			t.Errorf("String() = %q, missing %q", s, part)
		}
	}
}

// The linear-time median and standard error used by Check agree with the
// sort-based ones for every size and for inputs full of ties.
func TestMedianAndSEMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 2; n < 300; n++ {
		for _, ties := range []bool{false, true} {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.ExpFloat64()
				if ties {
					x[i] = math.Floor(x[i] * 3)
				}
			}
			orig := append([]float64(nil), x...)
			se, med := medianAndSE(x)
			s := sorted(x)
			if wantSE, wantMed := MedianSE(s), Quantile(s, 0.5); se != wantSE || med != wantMed {
				t.Fatalf("n=%d ties=%v: medianAndSE = (%v, %v), want (%v, %v)", n, ties, se, med, wantSE, wantMed)
			}
			for i := range x {
				if x[i] != orig[i] {
					t.Fatalf("medianAndSE reordered its input")
				}
			}
		}
	}
}

func BenchmarkCheck100k(b *testing.B) {
	x := noisy(100000, 0.5)
	r := DefaultStoppingRule()
	for b.Loop() {
		r.Check(x, 5, 7)
	}
}

// MeanSE returns the standard error of the mean, sd/sqrt(n), or NaN for
// fewer than two samples.
func MeanSE(samples []float64) float64 {
	n := len(samples)
	if n < 2 {
		return math.NaN()
	}
	sum := 0.0
	for _, v := range samples {
		sum += v
	}
	return stdev(samples, sum/float64(n)) / math.Sqrt(float64(n))
}
