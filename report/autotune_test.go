package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/result"
)

func autotuned() *result.Results {
	tm := &result.Timing{MedianMS: 1.5, Q1MS: 1.49, Q3MS: 1.51, Converged: true}
	tuned := result.Autotune{Kernel: "matmul_kernel", Kind: "triton", Config: "128x256x64/w8/s3", Source: result.AutotuneTuned, TuningMS: 1240,
		TimingsMS: map[string]float64{"128x256x64/w8/s3": 1.49, "128x128x32/w4/s4": 1.88}}
	cached := tuned
	cached.Config, cached.Source, cached.TuningMS, cached.TimingsMS = "64x128x32/w4/s4", result.AutotuneCache, 0, nil
	return &result.Results{Experiment: "autotuned-matmul", Status: "succeeded", Mode: "gpu", SweepKeys: []string{"N"},
		Implementations: []string{"cublas", "triton"}, Baseline: "cublas",
		Cases: []result.Case{
			{Params: map[string]any{"N": 512}, Label: "N=512", Results: map[string]*result.ImplResult{
				"cublas": {Status: "ok", Timing: tm}, "triton": {Status: "ok", Timing: tm, Autotune: []result.Autotune{cached}}}},
			{Params: map[string]any{"N": 8192}, Label: "N=8192", Results: map[string]*result.ImplResult{
				"cublas": {Status: "ok", Timing: tm}, "triton": {Status: "ok", Timing: tm, Autotune: []result.Autotune{tuned}}}},
		}}
}

func TestAutotunedConfigsAreShown(t *testing.T) {
	var b bytes.Buffer
	if err := Text(&b, autotuned()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"autotuned (the config each kernel ran with):",
		"triton  N=512   matmul_kernel  64x128x32/w4/s4   from the autotune cache (an earlier run's choice)",
		"triton  N=8192  matmul_kernel  128x256x64/w8/s3  tuned in 1.2 s (best of 2 configs)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := Markdown(&b, autotuned()); err != nil {
		t.Fatal(err)
	}
	if want := "| triton | N=8192 | matmul_kernel | 128x256x64/w8/s3 | tuned in 1.2 s (best of 2 configs) |"; !strings.Contains(b.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, b.String())
	}
	// Nothing autotuned: no section.
	r := autotuned()
	for _, c := range r.Cases {
		c.Results["triton"].Autotune = nil
	}
	b.Reset()
	if err := Text(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "autotuned (") {
		t.Errorf("a run without autotuned kernels has the section:\n%s", b.String())
	}
}
