package report

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// timed makes a converged timing around median with a 0.3% spread.
func timed(median float64) *result.Timing {
	return &result.Timing{MedianMS: median, MeanMS: median * 1.001, MinMS: median * 0.99, MaxMS: median * 1.02,
		Q1MS: median * 0.997, Q3MS: median * 1.003, P20MS: median * 0.996, P80MS: median * 1.004,
		StdevMS: median * 0.004, StderrRel: 0.0004, Samples: 200, Rounds: 3, TotalS: 1, Converged: true, StopReason: "converged"}
}

func passed() *result.Correctness {
	return &result.Correctness{Passed: true, Trials: 3, Seeds: []int64{0, 1, 7919}, Tolerance: result.Tolerance{Atol: 1e-2, Rtol: 1e-2}, Dtype: "bfloat16"}
}

// seed001 is a results document with seed 001's numbers: GLA intra-chunk on
// a T4, three T values, baseline and pipelined, the reference timed too.
func seed001(t *testing.T) *result.Results {
	created := time.Date(2026, 2, 16, 9, 30, 0, 0, time.UTC)
	finished := created.Add(5*time.Minute + 12*time.Second)
	rule := analyze.DefaultStoppingRule()
	r := &result.Results{
		SchemaVersion: 1, JobID: "j-20260216-0930-7f3a", Experiment: "gla-pingpong", CreatedAt: created, FinishedAt: &finished,
		RunnerVersion: "v0.1.0", ClientVersion: "v0.1.0", SpecHash: "c08f9698",
		Image: result.Image{Ref: "xrun/gla-pingpong:5d1e", Digest: "sha256:9b1c"},
		Env: result.Env{Host: "t4-box", OS: "linux", Arch: "amd64", Python: "3.11.2", Torch: "2.5.1", Triton: "3.1.0",
			CUDARuntime: "12.4", Driver: "570.124.06",
			GPUs: []result.GPU{{Index: 0, Name: "Tesla T4", ComputeCapability: "7.5", SMCount: 40, L2Bytes: 4 << 20,
				MemoryBytes: 15 << 30, PeakTFLOPS: 65, PeakGBps: 320,
				Before: &result.GPUState{SMClockMHz: 1590, MaxSMClockMHz: 1590, MemClockMHz: 5000, TemperatureC: 41, PowerW: 28, PowerLimitW: 70, ClockEventReasons: []string{"gpu_idle"}},
				After:  &result.GPUState{SMClockMHz: 1590, MaxSMClockMHz: 1590, MemClockMHz: 5000, TemperatureC: 63, PowerW: 69, PowerLimitW: 70, Utilization: 100, ClockEventReasons: []string{"sw_power_cap"}},
				During: &result.Clocks{Readings: 140, SMClockMHz: 1365, MinSMClockMHz: 1215, MaxSMClockMHz: 1590, MaxPowerW: 70.2,
					ClockEventReasons: []string{"sw_power_cap"}, ThrottledReadings: 131}}}},
		Methodology: result.Methodology{Timer: "cuda_events", FlushBytes: 256 << 20, TimerFloorMS: 0.00122, WarmupMS: 100, LaterWarmupMS: 20, MinSamples: rule.MinSamples,
			MaxSamples: rule.MaxSamples, MinTimeS: rule.MinTimeS, MaxTimeS: rule.MaxTimeS, TargetRSE: rule.TargetRSE,
			StoppingRule: rule.String(), Rounds: 3, Trials: 3, ImplTimeoutS: 600, FastThreshold: 1.02,
			KernelClock: "cupti", LaunchMS: 0.00108},
		Mode: "gpu", SweepKeys: []string{"T"}, Implementations: []string{"baseline", "pipelined"}, Baseline: "baseline",
	}
	medians := map[int][3]float64{1024: {31.2, 5.645, 20.628}, 2048: {62.9, 10.640, 41.390}, 4096: {127.4, 20.878, 82.433}}
	for _, T := range []int{1024, 2048, 4096} {
		m := medians[T]
		flops := 8.58e9 * float64(T) / 1024
		tokens := 4.0 * float64(T)
		c := result.Case{Params: map[string]any{"B": 4, "H": 32, "d": 64, "chunk": 256, "dtype": "bfloat16", "T": T},
			Label: "T=" + itoa(T), Flops: flops, Tokens: tokens, Results: map[string]*result.ImplResult{}}
		for i, name := range []string{"reference", "baseline", "pipelined"} {
			ir := &result.ImplResult{Status: result.ImplOK, Timing: timed(m[i])}
			if name != "reference" {
				ir.Correctness = passed()
			}
			ir.Throughput = analyze.Throughput(result.Model{Flops: flops, Tokens: tokens}, *ir.Timing, &r.Env.GPUs[0], "bfloat16")
			c.Results[name] = ir
		}
		r.Cases = append(r.Cases, c)
	}
	nc := r.Cases[2].Results["reference"].Timing
	nc.Converged, nc.StopReason, nc.StderrRel, nc.Samples, nc.TotalS = false, "max_time", 0.0071, 118, 15
	r.Comparisons = analyze.Comparisons(r, 1.02)
	s := &spec.Spec{Criteria: []spec.Criterion{
		{Speedup: "pipelined", Over: "baseline", AtLeast: 1.2, Expect: "fail"},
		{MaxError: "all", Below: 1e-2},
	}}
	r.Criteria, r.Success = analyze.Criteria(s, r)
	r.Warnings = analyze.Warnings(r)
	r.Status = result.StatusCriteriaFailed
	if r.Success {
		t.Fatal("seed 001 fixture passes its criteria")
	}
	return r
}

// cpuFailures is a CPU run with two sweep groups (dtype differs between
// them but is not swept), a skipped GPU-only implementation, a crash and a
// wrong result.
func cpuFailures(t *testing.T) *result.Results {
	r := &result.Results{
		SchemaVersion: 1, JobID: "j-cpu", Experiment: "gla-pingpong", CreatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		RunnerVersion: "v0.1.0", Mode: "cpu", Status: result.StatusFailed,
		Env:         result.Env{Host: "laptop", OS: "linux", Arch: "arm64", Python: "3.11.2", Numpy: "1.26.4", Torch: "2.5.1"},
		Methodology: result.Methodology{Timer: "perf_counter", MinSamples: 10, Rounds: 3, Trials: 3, ImplTimeoutS: 60, StoppingRule: analyze.DefaultStoppingRule().String()},
		SweepKeys:   []string{"T"}, Implementations: []string{"baseline", "pipelined", "fused", "broken"}, Baseline: "baseline",
	}
	for _, p := range []map[string]any{{"T": 64, "dtype": "float32"}, {"T": 128, "dtype": "float32"}, {"T": 64, "dtype": "float64"}} {
		c := result.Case{Params: p, Results: map[string]*result.ImplResult{
			"baseline":  {Status: result.ImplOK, Timing: timed(0.0123 * float64(p["T"].(int)) / 64), Correctness: passed()},
			"pipelined": {Status: result.ImplSkipped, Error: "needs a GPU (requires: triton); this host has none"},
			"fused": {Status: result.ImplWrong, Timing: timed(0.0051), Correctness: &result.Correctness{Passed: false, Trials: 3,
				MaxAbsError: 0.75, MaxRelError: 1, RMSRelError: 0.2, MismatchFraction: 0.5, Tolerance: result.Tolerance{Atol: 1e-4, Rtol: 1e-4}}},
			"broken": {Status: result.ImplCrashed, Error: "worker died: signal SIGSEGV\nFatal Python error: Segmentation fault", StderrTail: "..."},
		}}
		r.Cases = append(r.Cases, c)
	}
	r.Cases[2].Results["fused"].Correctness.Reason = "inputs modified: argument 0 changed"
	r.Cases[1].Results["baseline"].Metrics = map[string]float64{"ctas": 16}
	r.Comparisons = analyze.Comparisons(r, 1.02)
	r.Criteria, r.Success = analyze.Criteria(&spec.Spec{Criteria: []spec.Criterion{{Correct: "all"}, {Time: "baseline", BelowMS: 1}}}, r)
	r.Warnings = analyze.Warnings(r)
	r.Error = "2 implementations failed"
	return r
}

func itoa(n int) string { return spec.FormatValue(int64(n)) }

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test ./report -update to make it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		r    func(*testing.T) *result.Results
	}{
		{"seed001", seed001},
		{"cpu_failures", cpuFailures},
	} {
		t.Run(c.name, func(t *testing.T) {
			var md, txt bytes.Buffer
			if err := Markdown(&md, c.r(t)); err != nil {
				t.Fatal(err)
			}
			if err := Text(&txt, c.r(t)); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".md", md.Bytes())
			golden(t, c.name+".txt", txt.Bytes())
		})
	}
}

func TestColumns(t *testing.T) {
	mk := func(keys []string, params ...map[string]any) *result.Results {
		r := &result.Results{SweepKeys: keys}
		for _, p := range params {
			r.Cases = append(r.Cases, result.Case{Params: p})
		}
		return r
	}
	for _, c := range []struct {
		name string
		r    *result.Results
		want []string
	}{
		{"one axis", mk([]string{"T"}, map[string]any{"T": 1, "B": 4}, map[string]any{"T": 2, "B": 4}), []string{"T=1", "T=2"}},
		{"two axes", mk([]string{"T", "M"}, map[string]any{"T": 1, "M": 8}, map[string]any{"T": 1, "M": 16}), []string{"T=1 M=8", "T=1 M=16"}},
		{"groups differ in a fixed param", mk([]string{"T"}, map[string]any{"T": 1, "d": 64}, map[string]any{"T": 1, "d": 128}),
			[]string{"d=64", "d=128"}},
		{"no sweep, one case", mk(nil, map[string]any{"B": 4}), []string{"all"}},
		{"sweep key constant across groups", mk([]string{"T", "causal"}, map[string]any{"T": 1, "causal": true, "h": 1}, map[string]any{"T": 2, "causal": true, "h": 2}),
			[]string{"T=1 h=1", "T=2 h=2"}},
	} {
		if got := columns(c.r); !slices.Equal(got, c.want) {
			t.Errorf("%s: columns = %q, want %q", c.name, got, c.want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrors(t *testing.T) {
	if err := Markdown(failWriter{}, seed001(t)); err == nil {
		t.Error("Markdown to a failing writer returned no error")
	}
	if err := Text(failWriter{}, seed001(t)); err == nil {
		t.Error("Text to a failing writer returned no error")
	}
}

// A Python exception's last lines are shown under the table, once per
// implementation when every case fails alike.
func TestTextShowsTracebackTail(t *testing.T) {
	tb := `Traceback (most recent call last):
  File "/xrun/runner/harness.py", line 410, in _call
    out = fn(*inputs)
  File "/xrun/exp/broken.py", line 15, in broken
    y = helper(x)
  File "/xrun/exp/broken.py", line 11, in helper
    raise RuntimeError("this kernel is broken on purpose")
RuntimeError: this kernel is broken on purpose`
	r := &result.Results{Experiment: "e", Status: result.StatusFailed, SweepKeys: []string{"N"}, Implementations: []string{"broken"}}
	for _, n := range []int{8, 16} {
		r.Cases = append(r.Cases, result.Case{Params: map[string]any{"N": n}, Results: map[string]*result.ImplResult{
			"broken": {Status: result.ImplError, Error: "fn raised RuntimeError: this kernel is broken on purpose\n" + tb},
		}})
	}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := `not ok:
  N=8 broken error: fn raised RuntimeError: this kernel is broken on purpose
    |     out = fn(*inputs)
    |   File "/xrun/exp/broken.py", line 15, in broken
    |     y = helper(x)
    |   File "/xrun/exp/broken.py", line 11, in helper
    |     raise RuntimeError("this kernel is broken on purpose")
    | RuntimeError: this kernel is broken on purpose
  N=16 broken error: fn raised RuntimeError: this kernel is broken on purpose
`
	if !strings.Contains(out, want) {
		t.Errorf("table lacks the traceback tail:\n%s\nwant:\n%s", out, want)
	}
}

// The table shows the rate nearer its peak: GB/s for a memory-bound
// kernel, whose FLOP rate says little; each rate in the unit its column
// picked, with three significant digits.
func TestFmtBound(t *testing.T) {
	one := func(tp result.Throughput) tableUnits {
		return unitsOf(&result.Results{Cases: []result.Case{{Results: map[string]*result.ImplResult{"a": {Throughput: &tp}}}}})
	}
	for _, c := range []struct {
		name string
		t    result.Throughput
		want string
	}{
		{"memory bound", result.Throughput{TFLOPS: 0.0031, GBps: 2680, PctPeakFlops: 0.0003, PctPeakBW: 80}, "2680 GB/s 80%"},
		{"compute bound", result.Throughput{TFLOPS: 612.4, GBps: 310, PctPeakFlops: 61.9, PctPeakBW: 9.3}, "612 TFLOPS 62%"},
		{"no bytes model", result.Throughput{TFLOPS: 1.52, PctPeakFlops: 2.3}, "1.52 TFLOPS 2.3%"},
		{"no peaks, tiny flops", result.Throughput{TFLOPS: 0.001, GBps: 12.5}, "1.00 GFLOPS"},
		{"no peaks", result.Throughput{TFLOPS: 0.8, GBps: 12.5}, "800 GFLOPS"},
		{"a CPU's small case", result.Throughput{TFLOPS: 0.0021, GBps: 0.004}, "2.10 GFLOPS"},
		{"a CPU's small case, bytes only", result.Throughput{GBps: 0.0042}, "4.20 MB/s"},
		{"no model", result.Throughput{TokensPerS: 1e6}, "-"},
	} {
		if got := fmtBound(&c.t, one(c.t)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// One unit per column: a CPU sweep whose rates span GFLOPS and TFLOPS
// reads in one of them, never 0.00.
func TestOneUnitPerColumn(t *testing.T) {
	r := &result.Results{Experiment: "e", Status: result.StatusSucceeded, Mode: "cpu", SweepKeys: []string{"N"}, Implementations: []string{"mine"}}
	for i, v := range []struct{ ms, tflops float64 }{{0.000811, 0.00123}, {0.000802, 0.0123}, {0.5, 0.0125}} {
		tm := timed(v.ms)
		r.Cases = append(r.Cases, result.Case{Params: map[string]any{"N": i}, Results: map[string]*result.ImplResult{
			"mine": {Status: result.ImplOK, Timing: tm, Throughput: &result.Throughput{TFLOPS: v.tflops}}}})
	}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"MEDIAN µs", "0.8110", "0.8020", "500.0", "1.23 GFLOPS", "12.3 GFLOPS", "12.5 GFLOPS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TFLOPS") || strings.Contains(out, "0.00 ") {
		t.Errorf("mixed or lossy units:\n%s", out)
	}
}

// A run with nothing to compare (one implementation, no baseline) has no
// SPEEDUP column; a compared run keeps it.
func TestTextSpeedupColumnOnlyWhenCompared(t *testing.T) {
	r := &result.Results{Experiment: "e", Status: result.StatusSucceeded, SweepKeys: []string{"N"}, Implementations: []string{"mine"}}
	r.Cases = append(r.Cases, result.Case{Params: map[string]any{"N": 8}, Results: map[string]*result.ImplResult{
		"mine": {Status: result.ImplOK, Timing: timed(1.5), Correctness: passed()},
	}})
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "SPEEDUP") || !strings.Contains(b.String(), "Q1-Q3 ms     THROUGHPUT") {
		t.Errorf("one implementation, no baseline:\n%s", b.String())
	}
	b.Reset()
	if err := Text(&b, seed001(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "SPEEDUP") {
		t.Errorf("a compared run lost its SPEEDUP column:\n%s", b.String())
	}
}

// An experiment's error text with escape sequences (a colour, a retitle,
// OSC 52 to the clipboard) reaches neither the table nor the Markdown, to a
// terminal or not: a CI log renders escapes as a terminal does.
func TestReportsDropControlSequences(t *testing.T) {
	evil := "boom \x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \rover"
	r := &result.Results{Experiment: "e", Status: result.StatusFailed, Error: evil, SweepKeys: []string{"N"}, Implementations: []string{"broken"}}
	r.Cases = []result.Case{{Params: map[string]any{"N": 8}, Label: "N=8", Results: map[string]*result.ImplResult{
		"broken": {Status: result.ImplError, Error: evil},
	}}}
	for name, render := range map[string]func(io.Writer, *result.Results) error{"text": Text, "markdown": Markdown} {
		var b bytes.Buffer
		if err := render(&b, r); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07\r") || !strings.Contains(b.String(), "boom red") {
			t.Errorf("%s keeps control sequences or lost the text: %q", name, b.String())
		}
	}
}

// A work model with FLOPs and bytes gives the arithmetic intensity, and on
// a GPU the peaks table knows, the side of the ridge point.
func TestMarkdownBoundRow(t *testing.T) {
	tm := timed(0.5)
	gpu := &result.GPU{Name: "NVIDIA H100 80GB HBM3"}
	r := &result.Results{Status: result.StatusSucceeded, Mode: "gpu", Implementations: []string{"a"}, Baseline: "a",
		Env: result.Env{GPUs: []result.GPU{*gpu}},
		Cases: []result.Case{
			{Label: "N=1", Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK, Timing: tm,
				Throughput: analyze.Throughput(result.Model{Flops: 1e9, Bytes: 1e8}, *tm, gpu, "bf16")}}},
			{Label: "N=2", Results: map[string]*result.ImplResult{"a": {Status: result.ImplOK, Timing: tm,
				Throughput: analyze.Throughput(result.Model{Flops: 1e12, Bytes: 1e8}, *tm, gpu, "bf16")}}},
		}}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if want := "| a FLOP/B | 10 (memory-bound) | 1e+04 (compute-bound) |"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
}

// A criterion of a job that did not run to its verdict reads as not
// evaluated: no FAIL, no made-up value.
func TestCriterionNotEvaluated(t *testing.T) {
	r := &result.Results{Experiment: "e", Status: result.StatusCancelled, Criteria: []result.Criterion{
		{Name: "fast >= 1.2x over base at every case", Kind: "speedup", Threshold: 1.2, NotEvaluated: true, Detail: "job cancelled"}}}
	var text, md bytes.Buffer
	if err := Text(&text, r); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{text.String(), md.String()} {
		if !strings.Contains(out, "fast >= 1.2x over base at every case**: not evaluated; job cancelled") &&
			!strings.Contains(out, "n/a   fast >= 1.2x over base at every case: not evaluated; job cancelled") {
			t.Errorf("no not-evaluated line in:\n%s", out)
		}
		if strings.Contains(out, "FAIL") || strings.Contains(out, "0x") || strings.Contains(out, "❌") {
			t.Errorf("a FAIL or a value in:\n%s", out)
		}
	}
}

// A --cpu run of a GPU experiment says under its status that nothing was
// compared.
func TestTextNothingCompared(t *testing.T) {
	skip := &result.ImplResult{Status: result.ImplSkipped, Error: "needs a GPU (requires: triton); this host has none"}
	r := &result.Results{Experiment: "e", Status: result.StatusSucceeded, Mode: "cpu", SweepKeys: []string{"N"},
		Baseline: "a", Implementations: []string{"a", "b", "c"}}
	r.Cases = append(r.Cases, result.Case{Params: map[string]any{"N": 8}, Results: map[string]*result.ImplResult{
		"reference": {Status: result.ImplOK, Timing: timed(1.5)}, "a": skip, "b": skip, "c": skip}})
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "e  succeeded  cpu\nnothing compared: all 3 implementations skipped (needs a GPU)\n"; !strings.HasPrefix(b.String(), want) {
		t.Errorf("table:\n%s\nwant it to start with:\n%s", b.String(), want)
	}
}

// A run whose criteria passed where they could be evaluated, one skipped
// (a GPU-only implementation on a CPU run), does not read as all passed.
func TestMarkdownOutcomeWithASkippedCriterion(t *testing.T) {
	r := &result.Results{Experiment: "e", Status: result.StatusSucceeded, Success: true, Criteria: []result.Criterion{
		{Name: "every implementation correct", Kind: "correct", Passed: true},
		{Name: "fast >= 1.2x over base", Kind: "speedup", Threshold: 1.2, Skipped: true, Detail: "fast skipped: needs a GPU"}}}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if want := "**Outcome**: every criterion evaluated passed; 1 of 2 skipped"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
}

// A stopped sweep's table says once why what it did not run was not run,
// with the cases (and, where some of a case ran, the implementations).
func TestNotRunSaidOnce(t *testing.T) {
	r := &result.Results{Experiment: "e", Status: result.StatusCancelled, Error: "cancelled", SweepKeys: []string{"M"},
		Implementations: []string{"blocked"}}
	ok := func() *result.ImplResult {
		return &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{MedianMS: 1, Q1MS: 1, Q3MS: 1, Samples: 10, Converged: true}}
	}
	notRun := func() *result.ImplResult { return &result.ImplResult{Status: result.ImplNotRun, Error: "cancelled"} }
	for m := 1; m <= 12; m++ {
		c := result.Case{Params: map[string]any{"M": m}, Results: map[string]*result.ImplResult{result.Reference: notRun(), "blocked": notRun()}}
		switch m {
		case 1:
			c.Results[result.Reference], c.Results["blocked"] = ok(), ok()
		case 2:
			c.Results[result.Reference] = ok()
		}
		r.Cases = append(r.Cases, c)
	}
	var b bytes.Buffer
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "not ok:\n  not_run: cancelled: M=2 (blocked), M=3, M=4, ... M=11, M=12 (11 cases)\n"
	if !strings.Contains(out, want) {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
	if n := strings.Count(out, "cancelled"); n != 2 { // the run's status and the line above
		t.Errorf("says cancelled %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "M=12  blocked") {
		t.Errorf("the table leaves out a case that never ran:\n%s", out)
	}
}

// Names and errors an experiment chose are text in the markdown report
// (issue 47): an implementation named like a link or HTML, a case label
// with a |, an error with an image, cannot make markup of a pull
// request's comment or end a table cell.
func TestMarkdownNamesAreText(t *testing.T) {
	tm := timed(0.5)
	evil := "[x](https://evil.example)"
	r := &result.Results{Experiment: "<img src=x>", Status: result.StatusFailed, Mode: "cpu",
		Implementations: []string{evil, "b"}, Baseline: evil,
		Cases: []result.Case{{Label: "N=1|<b>", Results: map[string]*result.ImplResult{
			evil: {Status: result.ImplOK, Timing: tm},
			"b":  {Status: result.ImplError, Error: "RuntimeError: ![pic](https://evil.example/p.png)"},
		}}}}
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	for _, bad := range []string{"<img", "[x](", "![pic](", "N=1|", "<b>"} {
		if i := strings.Index(out, bad); i >= 0 && (i == 0 || out[i-1] != '\\') {
			t.Errorf("the markdown holds %q unescaped:\n%s", bad, out)
		}
	}
	for _, want := range []string{`\[x\]`, `N=1\|\<b\>`, `\!\[pic\]`} {
		if !strings.Contains(out, want) {
			t.Errorf("the markdown lacks %q:\n%s", want, out)
		}
	}
}
