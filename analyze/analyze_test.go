package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

func tm(q1, med, q3 float64) result.Timing {
	return result.Timing{Q1MS: q1, MedianMS: med, Q3MS: q3, Samples: 100, Converged: true, StopReason: "converged"}
}

// tmSE is a timing with the median's relative standard error rse.
func tmSE(q1, med, q3, rse float64) result.Timing {
	t := tm(q1, med, q3)
	t.StderrRel = rse
	return t
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name       string
		cand, base result.Timing
		th         float64
		speedup    float64
		verdict    string
	}{
		{"clearly faster", tm(0.49, 0.5, 0.51), tm(0.99, 1, 1.01), 1.02, 2, result.VerdictFast},
		{"clearly slower", tm(3.9, 4, 4.1), tm(0.99, 1, 1.01), 1.02, 0.25, result.VerdictSlow},
		{"identical", tm(0.99, 1, 1.01), tm(0.99, 1, 1.01), 1.02, 1, result.VerdictSame},
		{"1% apart, precise", tm(0.985, 0.99, 1.0), tm(0.99, 1, 1.01), 1.02, 1 / 0.99, result.VerdictSame},
		// 5 % apart with IQRs of 40 %: the notch's interval (+-6 %) reaches
		// across the margin.
		{"5% apart, wide spread", tm(0.8, 0.95, 1.2), tm(0.85, 1, 1.25), 1.02, 1 / 0.95, result.VerdictAmbiguous},
		// The H200 GEMM at N = 4096: the candidate 3.6 % slower,
		// cuBLAS's IQR spanning 4.6 % under the power cap, both medians
		// known to 0.1 %: SLOW, where q1-q3 overlap read AMBIGUOUS.
		{"power cap: wide IQR, precise medians", tmSE(0.1880, 0.1893, 0.1905, 0.001), tmSE(0.1790, 0.1827, 0.1874, 0.001), 1.02,
			0.1827 / 0.1893, result.VerdictSlow},
		{"close medians, disjoint IQRs inside margin", tm(0.995, 0.996, 0.997), tm(1.0, 1.001, 1.002), 1.02, 1.001 / 0.996, result.VerdictSame},
		// 2.1 % apart, each median known to +-0.4 %: the interval
		// [1.015, 1.027] reaches across 1.02.
		{"just past the margin, uncertain", tmSE(0.97, 0.98, 0.99, 0.002), tmSE(0.99, 1.0006, 1.01, 0.002), 1.02, 1.0006 / 0.98,
			result.VerdictAmbiguous},
		{"just past the margin, precise", tmSE(0.979, 0.98, 0.981, 0.0002), tmSE(0.999, 1.0006, 1.001, 0.0002), 1.02, 1.0006 / 0.98,
			result.VerdictFast},
		{"no margin: a precise difference is FAST", tmSE(0.995, 0.996, 0.997, 0.0002), tmSE(1.0, 1.001, 1.002, 0.0002), 1,
			1.001 / 0.996, result.VerdictFast},
		// 5 % apart: FAST at the default 2 %; at a margin of 1.1 it would be SAME.
		{"threshold below 1 means the default", tmSE(0.9, 0.95, 1.0, 0.001), tmSE(1.019, 1.05, 1.1, 0.001), 0, 1.05 / 0.95,
			result.VerdictFast},
		{"symmetric slow", tm(1.04, 1.05, 1.06), tm(0.94, 0.95, 0.96), 1.02, 0.95 / 1.05, result.VerdictSlow},
		{"no candidate timing", result.Timing{}, tm(0.99, 1, 1.01), 1.02, 0, result.VerdictAmbiguous},
		{"no baseline timing", tm(0.99, 1, 1.01), result.Timing{}, 1.02, 0, result.VerdictAmbiguous},
		{"10% margin", tm(0.92, 0.935, 0.95), tm(1.0, 1.01, 1.02), 1.1, 1.01 / 0.935, result.VerdictSame},
		{"10% margin, medians 12% apart", tm(0.88, 0.9, 0.92), tm(1.0, 1.01, 1.02), 1.1, 1.01 / 0.9, result.VerdictFast},
		// A single sample each: no interval, the medians decide.
		{"one sample each", result.Timing{MedianMS: 1, Samples: 1}, result.Timing{MedianMS: 1.5, Samples: 1}, 1.02, 1.5, result.VerdictFast},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, v := Verdict(c.cand, c.base, c.th)
			if v != c.verdict || math.Abs(s-c.speedup) > 1e-12 {
				lo, hi, _ := SpeedupInterval(c.cand, c.base)
				t.Errorf("Verdict = (%v, %s), want (%v, %s); interval [%.4f, %.4f]", s, v, c.speedup, c.verdict, lo, hi)
			}
		})
	}
}

// The verdict repeats when the medians do: five runs of the N =
// 4096 pair, the candidate 3.4-3.9 % slower, cuBLAS's IQR 1.5-4.6 %
// wide from run to run.
func TestVerdictRepeatsWithTheMedians(t *testing.T) {
	runs := []struct{ cand, base result.Timing }{
		{tmSE(0.1885, 0.1892, 0.1900, 0.0008), tmSE(0.1790, 0.1828, 0.1874, 0.0012)},
		{tmSE(0.1887, 0.1893, 0.1901, 0.0007), tmSE(0.1812, 0.1826, 0.1840, 0.0006)},
		{tmSE(0.1884, 0.1894, 0.1903, 0.0009), tmSE(0.1800, 0.1822, 0.1851, 0.0010)},
		{tmSE(0.1886, 0.1891, 0.1899, 0.0006), tmSE(0.1808, 0.1820, 0.1837, 0.0007)},
		{tmSE(0.1884, 0.1890, 0.1898, 0.0007), tmSE(0.1795, 0.1827, 0.1869, 0.0011)},
	}
	for i, r := range runs {
		if _, v := Verdict(r.cand, r.base, 0); v != result.VerdictSlow {
			t.Errorf("run %d: %s, want SLOW", i+1, v)
		}
	}
}

func TestMedianHalfWidth(t *testing.T) {
	if h := MedianHalfWidth(tmSE(0.9, 1, 1.1, 0.01)); math.Abs(h-0.0196) > 1e-4 {
		t.Errorf("from stderr_rel: %v, want 1.96 x 0.01", h)
	}
	// 1.58 x 0.2 / sqrt(100) / 1
	if h := MedianHalfWidth(tm(0.9, 1, 1.1)); math.Abs(h-0.0316) > 1e-9 {
		t.Errorf("from the notch: %v, want 0.0316", h)
	}
	if h := MedianHalfWidth(result.Timing{MedianMS: 1, Samples: 1}); h != 0 {
		t.Errorf("one sample: %v, want 0", h)
	}
}

func TestThroughput(t *testing.T) {
	h100 := &result.GPU{Name: "NVIDIA H100 80GB HBM3"}
	unknown := &result.GPU{Name: "Mystery GPU", PeakGBps: 500}
	tim := result.Timing{MedianMS: 2} // 2 ms
	for _, c := range []struct {
		name  string
		m     result.Model
		gpu   *result.GPU
		dtype string
		want  *result.Throughput
	}{
		{"no model", result.Model{}, h100, "bf16", nil},
		{"cpu", result.Model{Flops: 2e12, Bytes: 4e9, Tokens: 1000}, nil, "bf16",
			&result.Throughput{TFLOPS: 1000, GBps: 2000, TokensPerS: 500000, ArithmeticIntensity: 500}},
		{"h100 bf16", result.Model{Flops: 989.5e9, Bytes: 3.35e9}, h100, "bfloat16",
			&result.Throughput{TFLOPS: 494.75, GBps: 1675, PctPeakFlops: 50, PctPeakBW: 50, ArithmeticIntensity: 295.37, Bound: result.BoundCompute}},
		// The ridge of an H100 SXM in bf16 is 989.5e12 / 3350e9 = 295.4 FLOP/B.
		{"h100 bf16 just below the ridge", result.Model{Flops: 295e9, Bytes: 1e9}, h100, "bf16",
			&result.Throughput{TFLOPS: 147.5, GBps: 500, PctPeakFlops: 14.906518443658413, PctPeakBW: 14.925373134328359, ArithmeticIntensity: 295, Bound: result.BoundMemory}},
		{"unknown dtype keeps bandwidth pct", result.Model{Flops: 1e9, Bytes: 3.35e9}, h100, "complex64",
			&result.Throughput{TFLOPS: 0.5, GBps: 1675, PctPeakBW: 50, ArithmeticIntensity: 0.29850746268656714}},
		{"gpu not in table uses its own bandwidth", result.Model{Bytes: 1e9}, unknown, "fp16",
			&result.Throughput{GBps: 500, PctPeakBW: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Throughput(c.m, tim, c.gpu, c.dtype)
			if (got == nil) != (c.want == nil) {
				t.Fatalf("Throughput = %+v, want %+v", got, c.want)
			}
			if got == nil {
				return
			}
			if got.Bound != c.want.Bound {
				t.Errorf("bound = %q, want %q", got.Bound, c.want.Bound)
			}
			for _, f := range []struct {
				name string
				g, w float64
			}{
				{"tflops", got.TFLOPS, c.want.TFLOPS}, {"gbps", got.GBps, c.want.GBps},
				{"tokens", got.TokensPerS, c.want.TokensPerS}, {"pct flops", got.PctPeakFlops, c.want.PctPeakFlops},
				{"pct bw", got.PctPeakBW, c.want.PctPeakBW}, {"intensity", got.ArithmeticIntensity, c.want.ArithmeticIntensity},
			} {
				if math.Abs(f.g-f.w) > 1e-4*math.Max(1, f.w) {
					t.Errorf("%s = %v, want %v", f.name, f.g, f.w)
				}
			}
		})
	}
	if Throughput(result.Model{Flops: 1}, result.Timing{}, nil, "") != nil {
		t.Error("Throughput without a timing is not nil")
	}
}

func TestRoof(t *testing.T) {
	roof, ok := RoofFor(&result.GPU{Name: "NVIDIA H100 80GB HBM3"}, "float16")
	if !ok || roof.PeakTFLOPS != 989.5 || roof.PeakGBps != 3350 || roof.Dtype != "fp16" {
		t.Fatalf("RoofFor(H100, float16) = %+v, %v", roof, ok)
	}
	if r := roof.Ridge(); math.Abs(r-295.37) > 0.01 {
		t.Errorf("ridge = %v FLOP/B", r)
	}
	if a := roof.Attainable(10); math.Abs(a-33.5) > 1e-9 {
		t.Errorf("attainable at 10 FLOP/B = %v TFLOP/s, want 33.5", a)
	}
	if a := roof.Attainable(1000); a != 989.5 {
		t.Errorf("attainable at 1000 FLOP/B = %v TFLOP/s, want the peak", a)
	}
	if _, ok := RoofFor(&result.GPU{Name: "NVIDIA H100 80GB HBM3"}, "complex64"); ok {
		t.Error("a roof for an unknown dtype")
	}
	if _, ok := RoofFor(nil, "bf16"); ok {
		t.Error("a roof without a GPU")
	}
	if Throughput(result.Model{Flops: 1}, result.Timing{}, nil, "") != nil {
		t.Error("Throughput without a timing is not nil")
	}
}

func ok(t result.Timing, maxErr float64) *result.ImplResult {
	return &result.ImplResult{Status: result.ImplOK, Timing: &t,
		Correctness: &result.Correctness{Passed: true, Trials: 3, MaxAbsError: maxErr}}
}

// fixture: three T values, baseline and pipelined (seed 001's shape), with
// pipelined failing at T=4096.
func fixture() *result.Results {
	return &result.Results{
		Implementations: []string{"baseline", "pipelined", "fused"},
		Baseline:        "baseline",
		Methodology:     result.Methodology{TargetRSE: 0.005},
		Cases: []result.Case{
			{Label: "T=1024", Params: map[string]any{"T": 1024}, Results: map[string]*result.ImplResult{
				"reference": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 9, Q1MS: 8.9, Q3MS: 9.1, Samples: 12, Converged: false, StopReason: "max_time", StderrRel: 0.012, TotalS: 15}},
				"baseline":  ok(tm(5.6, 5.645, 5.7), 0),
				"pipelined": ok(tm(4.0, 4.1, 4.2), 0.004),
				"fused":     ok(tm(0.4, 0.41, 0.42), 0),
			}},
			{Label: "T=2048", Params: map[string]any{"T": 2048}, Results: map[string]*result.ImplResult{
				"baseline":  ok(tm(10.5, 10.64, 10.8), 0),
				"pipelined": ok(tm(8.0, 8.2, 8.4), 0.02),
				"fused":     {Status: result.ImplSkipped, Error: "needs sm_90"},
			}},
			{Label: "T=4096", Params: map[string]any{"T": 4096}, Results: map[string]*result.ImplResult{
				"baseline":  ok(tm(20.7, 20.878, 21), 0),
				"pipelined": {Status: result.ImplError, Error: "RuntimeError: CUDA error: an illegal memory access\nmore"},
				"fused":     {Status: result.ImplSkipped, Error: "needs sm_90"},
			}},
		},
	}
}

func TestComparisons(t *testing.T) {
	r := fixture()
	got := Comparisons(r, 1.02)
	want := []struct {
		a, label string
		speedup  float64
		verdict  string
	}{
		{"pipelined", "T=1024", 5.645 / 4.1, result.VerdictFast},
		{"fused", "T=1024", 5.645 / 0.41, result.VerdictFast},
		{"pipelined", "T=2048", 10.64 / 8.2, result.VerdictFast},
	}
	if len(got) != len(want) {
		t.Fatalf("Comparisons = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.A != w.a || g.B != "baseline" || g.Label != w.label || math.Abs(g.Speedup-w.speedup) > 1e-12 || g.Verdict != w.verdict {
			t.Errorf("comparison %d = %+v, want %+v", i, g, w)
		}
	}
	if got[0].Params["T"] != 1024 {
		t.Errorf("params not carried: %v", got[0].Params)
	}
}

func TestCriteria(t *testing.T) {
	r := fixture()
	for _, c := range []struct {
		name    string
		crit    spec.Criterion
		passed  bool
		value   float64
		th      float64
		wantIn  []string
		nameHas string
	}{
		{"speedup all fails on the crashed case", spec.Criterion{Speedup: "pipelined", Over: "baseline", AtLeast: 1.2},
			false, 10.64 / 8.2, 1.2, []string{"pipelined did not run (error) at T=4096"},
			"pipelined >= 1.2x over baseline at every case"},
		{"speedup any passes", spec.Criterion{Speedup: "pipelined", Over: "baseline", AtLeast: 1.2, For: "any"},
			true, 5.645 / 4.1, 1.2, nil, "at some case"},
		{"speedup median counts the crash as failing", spec.Criterion{Speedup: "pipelined", Over: "baseline", AtLeast: 1.2, For: "median"},
			true, 10.64 / 8.2, 1.2, nil, "at the median case"},
		{"speedup median with a high bar", spec.Criterion{Speedup: "pipelined", Over: "baseline", AtLeast: 1.35, For: "median"},
			false, 10.64 / 8.2, 1.35, []string{"T=2048 (1.30x)"}, ""},
		{"max error of one impl", spec.Criterion{MaxError: "pipelined", Below: 1e-2, For: "any"},
			true, 0.004, 1e-2, nil, "max error of pipelined < 0.01 at some case"},
		{"max error all impls, skipped left out", spec.Criterion{MaxError: "all", Below: 1e-1},
			false, 0.02, 0.1, []string{"left out: fused skipped: needs sm_90", "pipelined did not run (error) at T=4096"}, "every implementation"},
		{"correct baseline", spec.Criterion{Correct: "baseline"}, true, 1, 1, []string{"worst of 3 results"}, "baseline correct at every case"},
		{"time below", spec.Criterion{Time: "baseline", BelowMS: 25}, true, 20.878, 25, nil, "baseline median < 25 ms"},
		{"time below fails", spec.Criterion{Time: "baseline", BelowMS: 10, Name: "fast enough"}, false, 20.878, 10,
			[]string{"T=2048 (10.64 ms)", "T=4096 (20.88 ms)"}, "fast enough"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &spec.Spec{Criteria: []spec.Criterion{c.crit}}
			got, all := Criteria(s, r)
			if len(got) != 1 {
				t.Fatalf("got %d criteria", len(got))
			}
			g := got[0]
			if g.Passed != c.passed || all != c.passed || math.Abs(g.Value-c.value) > 1e-12 || g.Threshold != c.th || g.Kind != c.crit.Kind() {
				t.Errorf("criterion = %+v, want passed %v value %v threshold %v", g, c.passed, c.value, c.th)
			}
			for _, w := range c.wantIn {
				if !strings.Contains(g.Detail, w) {
					t.Errorf("detail %q lacks %q", g.Detail, w)
				}
			}
			if c.nameHas != "" && !strings.Contains(g.Name, c.nameHas) {
				t.Errorf("name %q lacks %q", g.Name, c.nameHas)
			}
		})
	}
}

func TestCriteriaWrongImplementation(t *testing.T) {
	r := fixture()
	r.Cases[1].Results["pipelined"].Status = result.ImplWrong
	r.Cases[1].Results["pipelined"].Correctness.Passed = false
	s := &spec.Spec{Criteria: []spec.Criterion{{Correct: "pipelined", For: "any"}, {Correct: "pipelined"}}}
	got, all := Criteria(s, r)
	if !got[0].Passed || got[1].Passed || all {
		t.Fatalf("criteria = %+v, all %v", got, all)
	}
	if !strings.Contains(got[1].Detail, "T=2048 (wrong)") || !strings.Contains(got[1].Detail, "T=4096") {
		t.Errorf("detail = %q", got[1].Detail)
	}
	if _, all := Criteria(&spec.Spec{}, r); !all {
		t.Error("no criteria is not all passed")
	}
}

func TestWarnings(t *testing.T) {
	r := fixture()
	r.Comparisons = Comparisons(r, 1.02)
	r.Env.GPUs = []result.GPU{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3",
			Before: &result.GPUState{SMClockMHz: 1980, Utilization: 100, ClockEventReasons: []string{}},
			After:  &result.GPUState{SMClockMHz: 1980, Utilization: 100, ClockEventReasons: []string{"sw_thermal_slowdown"}}},
		{Index: 1, Name: "NVIDIA H100 80GB HBM3",
			Before: &result.GPUState{SMClockMHz: 1980, Utilization: 100, ClockEventReasons: []string{}},
			After:  &result.GPUState{SMClockMHz: 345, ClockEventReasons: []string{"gpu_idle"}}},
	}
	got := Warnings(r)
	want := []struct{ kind, impl, label, msg string }{
		{WarnNotConverged, "reference", "T=1024", "relative standard error 1.20% after 12 samples and 15 s (max_time), target 0.5%"},
		{WarnThrottled, "", "", "GPU 0 (NVIDIA H100 80GB HBM3) was throttled by the end of the run: clock event reasons active: sw_thermal_slowdown"},
		{WarnExcessiveSpeedup, "fused", "T=1024", "fused is 13.8x faster than baseline at T=1024"},
	}
	if len(got) != len(want) {
		t.Fatalf("Warnings = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Implementation != w.impl || g.Label != w.label || !strings.Contains(g.Message, w.msg) {
			t.Errorf("warning %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestCriteriaSkippedImplementations(t *testing.T) {
	s := &spec.Spec{Criteria: []spec.Criterion{
		{Speedup: "fast", Over: "base", AtLeast: 1.2},
		{MaxError: "all", Below: 1e-2},
		{Correct: "base"},
	}}
	skipped := &result.ImplResult{Status: result.ImplSkipped, Error: "needs a GPU (requires: triton); this run has none"}
	ok := &result.ImplResult{Status: result.ImplOK, Correctness: &result.Correctness{Passed: true, MaxAbsError: 1e-3}}
	r := &result.Results{
		Implementations: []string{"reference", "base", "fast"},
		Cases:           []result.Case{{Label: "T=64", Results: map[string]*result.ImplResult{"base": ok, "fast": skipped}}},
	}
	crit, all := Criteria(s, r)
	if !all {
		t.Fatalf("skipped criteria must not fail the run: %+v", crit)
	}
	if !crit[0].Skipped || crit[0].Passed {
		t.Errorf("speedup over a skipped implementation: %+v", crit[0])
	}
	if crit[1].Skipped || !crit[1].Passed || !strings.Contains(crit[1].Detail, "left out: fast skipped") {
		t.Errorf("max_error must be evaluated on what ran and say what was left out: %+v", crit[1])
	}
	if !crit[2].Passed {
		t.Errorf("correct: %+v", crit[2])
	}
	// An implementation that failed (not skipped) still fails the criterion.
	r.Cases[0].Results["fast"] = &result.ImplResult{Status: result.ImplError, Error: "boom"}
	if _, all := Criteria(s, r); all {
		t.Errorf("a failed implementation must fail its criteria")
	}
}

// A speedup never divides one clock's reading by another's: where the two
// sides are on different clocks, both are compared on their events.
func TestComparisonsOneClock(t *testing.T) {
	kernel := func(k, ev float64) *result.ImplResult {
		return &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{
			MedianMS: k, Q1MS: k * 0.99, Q3MS: k * 1.01, Samples: 100, Clock: result.ClockKernel,
			Events: &result.ClockSummary{MedianMS: ev, Q1MS: ev * 0.99, Q3MS: ev * 1.01, Samples: 100}}}
	}
	events := func(ev float64) *result.ImplResult {
		return &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{
			MedianMS: ev, Q1MS: ev * 0.99, Q3MS: ev * 1.01, Samples: 100, Clock: result.ClockEvents}}
	}
	r := &result.Results{Implementations: []string{"base", "both", "mixed"}, Baseline: "base",
		Cases: []result.Case{{Label: "n=1", Results: map[string]*result.ImplResult{
			"base": kernel(0.0054, 0.0078), "both": kernel(0.0027, 0.0051), "mixed": events(0.0051)}}}}
	got := Comparisons(r, 1.02)
	if len(got) != 2 {
		t.Fatalf("Comparisons = %+v", got)
	}
	if want := 0.0054 / 0.0027; math.Abs(got[0].Speedup-want) > 1e-12 {
		t.Errorf("both on the kernel clock: speedup %v, want %v", got[0].Speedup, want)
	}
	if want := 0.0078 / 0.0051; math.Abs(got[1].Speedup-want) > 1e-12 {
		t.Errorf("kernel against events: speedup %v, want the events' %v", got[1].Speedup, want)
	}
	crit, _ := Criteria(&spec.Spec{Criteria: []spec.Criterion{{Speedup: "mixed", Over: "base", AtLeast: 1.5, For: "all"}}}, r)
	if len(crit) != 1 || math.Abs(crit[0].Value-0.0078/0.0051) > 1e-12 {
		t.Errorf("speedup criterion on mixed clocks = %+v", crit)
	}
}

func TestExpectedOutcome(t *testing.T) {
	crit := func(name string, passed bool, expect string) result.Criterion {
		return result.Criterion{Name: name, Kind: "speedup", Value: 1.05, Threshold: 1.2, Passed: passed, Expect: expect}
	}
	for _, c := range []struct {
		name          string
		r             result.Results
		expected      bool
		worse, better int
	}{
		{"succeeded as declared", result.Results{Status: result.StatusSucceeded, Criteria: []result.Criterion{crit("a", true, "")}}, true, 0, 0},
		{"a declared failure", result.Results{Status: result.StatusCriteriaFailed,
			Criteria: []result.Criterion{crit("speedup", false, result.ExpectFail), crit("correct", true, "")}}, true, 0, 0},
		{"a new failure beside a declared one", result.Results{Status: result.StatusCriteriaFailed,
			Criteria: []result.Criterion{crit("speedup", false, result.ExpectFail), crit("correct", false, "")}}, false, 1, 0},
		{"a declared failure passes", result.Results{Status: result.StatusSucceeded,
			Criteria: []result.Criterion{crit("speedup", true, result.ExpectFail)}}, false, 0, 1},
		{"skipped matches anything", result.Results{Status: result.StatusSucceeded,
			Criteria: []result.Criterion{{Name: "speedup", Skipped: true, Expect: result.ExpectFail}}}, true, 0, 0},
		{"the job failed", result.Results{Status: result.StatusFailed, Error: "pipelined crashed\nstack",
			Criteria: []result.Criterion{crit("speedup", false, result.ExpectFail)}}, false, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ExpectedOutcome(&c.r)
			if o.Expected != c.expected || len(o.Worse) != c.worse || len(o.Better) != c.better {
				t.Errorf("ExpectedOutcome = %+v", o)
			}
		})
	}
	o := ExpectedOutcome(&result.Results{Status: result.StatusCriteriaFailed, Criteria: []result.Criterion{crit("x", false, "")}})
	if len(o.Worse) != 1 || o.Worse[0] != `"x" failed (1.05x against 1.20x)` || o.Declared {
		t.Errorf("an undeclared file: %+v", o)
	}
	if o := ExpectedOutcome(&result.Results{Status: result.StatusSucceeded, Criteria: []result.Criterion{crit("x", true, result.ExpectPass)}}); !o.Declared || !o.Expected {
		t.Errorf("a declared pass: %+v", o)
	}
}

func TestWarningsNotConvergedWording(t *testing.T) {
	m := result.Methodology{TargetRSE: 0.005, MaxSamples: 100000, MaxTimeS: 15}
	for _, c := range []struct {
		name string
		tm   result.Timing
		want string // "" for no warning
	}{
		// Results written before the sample cap could converge: the error
		// is within the target, so there is nothing to warn about.
		{"within target at the sample cap", result.Timing{MedianMS: 0.0008, StderrRel: 0.00001, Samples: 100000, StopReason: "max_samples"}, ""},
		{"above target at the sample cap", result.Timing{MedianMS: 0.0008, StderrRel: 0.009, Samples: 100000, StopReason: "max_samples"},
			"relative standard error 0.90% after 100000 samples (max_samples: reached the 100000-sample cap), target 0.5%"},
		{"tiny error shown with digits", result.Timing{MedianMS: 1, StderrRel: 0.0000123, Samples: 50, TotalS: 20, StopReason: "max_time"},
			"relative standard error 0.0012% after 50 samples and 20 s (max_time: reached the 15 s time cap)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mm := m
			if c.name == "tiny error shown with digits" {
				mm.TargetRSE = 0.000001
			}
			r := &result.Results{Methodology: mm, Cases: []result.Case{{Label: "n=1", Results: map[string]*result.ImplResult{
				"reference": {Status: result.ImplOK, Timing: &c.tm}}}}}
			got := Warnings(r)
			if c.want == "" {
				if len(got) != 0 {
					t.Fatalf("Warnings = %+v, want none", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Message, c.want) {
				t.Fatalf("Warnings = %+v, want one containing %q", got, c.want)
			}
		})
	}
}

func TestPercent(t *testing.T) {
	for f, want := range map[float64]string{0: "0.00%", 0.012: "1.20%", 0.00001: "0.001%", 0.0000123: "0.0012%", 0.00005: "0.01%"} {
		if got := Percent(f); got != want {
			t.Errorf("Percent(%g) = %q, want %q", f, got, want)
		}
	}
}

// An incorrect implementation gets no speed verdict, even when it was timed.
func TestComparisonsLeaveOutWrong(t *testing.T) {
	tm := func(ms float64) *result.Timing {
		return &result.Timing{MedianMS: ms, Q1MS: ms * 0.99, Q3MS: ms * 1.01, Samples: 100, Converged: true}
	}
	r := &result.Results{Baseline: "base", Implementations: []string{"base", "fast", "bad"}, Cases: []result.Case{{Label: "n=1",
		Results: map[string]*result.ImplResult{
			"base": {Status: result.ImplOK, Timing: tm(1)},
			"fast": {Status: result.ImplOK, Timing: tm(0.5)},
			"bad":  {Status: result.ImplWrong, Timing: tm(0.05)},
		}}}}
	got := Comparisons(r, 1.02)
	if len(got) != 1 || got[0].A != "fast" {
		t.Errorf("Comparisons = %+v, want fast alone", got)
	}
}

// A job that did not run to its verdict has its criteria not evaluated:
// neither a FAIL with a value made up from what the stop left not run, nor
// a PASS on the part of the sweep that ran.
func TestCriteriaOfUnfinishedJob(t *testing.T) {
	s := &spec.Spec{Criteria: []spec.Criterion{
		{Speedup: "fast", Over: "base", AtLeast: 1.2},
		{Correct: "all"},
	}}
	ok := &result.ImplResult{Status: result.ImplOK, Correctness: &result.Correctness{Passed: true}}
	for _, status := range []string{result.StatusCancelled, result.StatusTimeout, result.StatusFailed} {
		r := &result.Results{Status: status, Baseline: "base", Implementations: []string{"base", "fast"}, Cases: []result.Case{{Label: "n=1",
			Results: map[string]*result.ImplResult{
				"base": ok,
				"fast": {Status: result.ImplNotRun, Error: "cancelled", Correctness: &result.Correctness{Passed: true}},
			}}}}
		if status == result.StatusFailed {
			r.Cases = nil // its setup failed
		}
		crit, _ := Criteria(s, r)
		for _, c := range crit {
			if !c.NotEvaluated || c.Passed || c.Skipped || c.Value != 0 || c.Detail != "job "+status {
				t.Errorf("%s: criterion %q = %+v, want not evaluated (job %s)", status, c.Name, c, status)
			}
		}
		if o := ExpectedOutcome(&result.Results{Status: status, Criteria: crit}); len(o.Worse) != 1 {
			t.Errorf("%s: outcome %+v, want the job's status alone", status, o)
		}
	}
}

// A run whose candidates were all skipped says that nothing was compared.
func TestNothingCompared(t *testing.T) {
	skip := &result.ImplResult{Status: result.ImplSkipped, Error: "needs a GPU (requires: triton); this host has none"}
	ok := &result.ImplResult{Status: result.ImplOK}
	mk := func(base *result.ImplResult, others ...*result.ImplResult) *result.Results {
		r := &result.Results{Baseline: "a", Implementations: []string{"a", "b", "c"}}
		for i := 0; i < 2; i++ {
			r.Cases = append(r.Cases, result.Case{Results: map[string]*result.ImplResult{"reference": ok, "a": base, "b": others[0], "c": others[1]}})
		}
		return r
	}
	for _, c := range []struct {
		name string
		r    *result.Results
		want string
	}{
		{"all skipped", mk(skip, skip, skip), "nothing compared: all 3 implementations skipped (needs a GPU)"},
		{"baseline ran", mk(ok, skip, skip), "nothing compared: all 2 implementations beside the baseline skipped (needs a GPU)"},
		{"one ran", mk(ok, ok, skip), ""},
		{"none skipped", mk(ok, ok, ok), ""},
		{"no cases", &result.Results{Implementations: []string{"a"}}, ""},
	} {
		if got := NothingCompared(c.r); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// by: conservative reads the ratio the FAST verdict reads (baseline q1 over
// candidate q3): a median ratio above the bar whose ranges overlap it fails.
func TestSpeedupCriterionConservative(t *testing.T) {
	r := &result.Results{Baseline: "base", Implementations: []string{"base", "fast"}, Cases: []result.Case{{Label: "n=1",
		Results: map[string]*result.ImplResult{
			"base": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1.25, Q1MS: 1.1, Q3MS: 1.4, Samples: 100}},
			"fast": {Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1.0, Q1MS: 0.95, Q3MS: 1.05, Samples: 100}},
		}}}}
	median := spec.Criterion{Speedup: "fast", Over: "base", AtLeast: 1.2}
	cons := median
	cons.By = "conservative"
	crit, _ := Criteria(&spec.Spec{Criteria: []spec.Criterion{median, cons}}, r)
	if !crit[0].Passed || math.Abs(crit[0].Value-1.25) > 1e-9 {
		t.Errorf("median: %+v, want a pass at 1.25x", crit[0])
	}
	if crit[1].Passed || math.Abs(crit[1].Value-1.1/1.05) > 1e-9 || !strings.Contains(crit[1].Name, "conservative") {
		t.Errorf("conservative: %+v, want a failure at %.4gx", crit[1], 1.1/1.05)
	}
}

// One throttled timing among clean ones, and one at the power cap: each
// timing is warned of by its own readings (an H200's, max 1980 MHz),
// and the power cap after the run is no warning.
func TestWarningsPerTiming(t *testing.T) {
	r := fixture()
	r.Env.GPUs = []result.GPU{{Index: 0, Name: "NVIDIA H200",
		Before: &result.GPUState{SMClockMHz: 345, MaxSMClockMHz: 1980, ClockEventReasons: []string{"gpu_idle"}},
		After:  &result.GPUState{SMClockMHz: 1770, MaxSMClockMHz: 1980, Utilization: 93, ClockEventReasons: []string{"sw_power_cap"}}}}
	clean := &result.Clocks{Readings: 5, SMClockMHz: 1980, MinSMClockMHz: 1980, MaxSMClockMHz: 1980, ClockEventReasons: []string{}}
	for _, c := range r.Cases {
		for _, ir := range c.Results {
			if ir.Timing != nil {
				ir.Timing.Clocks = clean
			}
		}
	}
	r.Cases[0].Results["baseline"].Timing.Clocks = &result.Clocks{Readings: 5, SMClockMHz: 1425, MinSMClockMHz: 1290, MaxSMClockMHz: 1755,
		ClockEventReasons: []string{"hw_thermal_slowdown"}, ThrottledReadings: 4, ReasonReadings: map[string]int{"hw_thermal_slowdown": 4}}
	r.Cases[1].Results["baseline"].Timing.Clocks = &result.Clocks{Readings: 4, SMClockMHz: 1785, MinSMClockMHz: 1575, MaxSMClockMHz: 1980,
		ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 4, ReasonReadings: map[string]int{"sw_power_cap": 4}}
	var kinds []string
	for _, w := range Warnings(r) {
		if w.Kind == WarnThrottled || w.Kind == WarnPowerCapped {
			kinds = append(kinds, w.Kind+" "+w.Implementation+" "+w.Label)
		}
	}
	want := []string{"throttled baseline " + CaseLabel(r.Cases[0]), "power_capped baseline " + CaseLabel(r.Cases[1])}
	if strings.Join(kinds, "; ") != strings.Join(want, "; ") {
		t.Errorf("warnings %q, want %q", kinds, want)
	}
}
