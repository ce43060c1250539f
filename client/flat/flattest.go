// Synthetic makes synthetic results as large as a run may make
// them, for the scale tests and benchmarks of flattening, the history's
// import and its readers (scripts/scale-bench.sh).

package flat

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// Synthetic is one run of cases cases (M and N swept) and impls implementations
// besides the reference, every one timed with 20 kept samples and compared
// with the first (the baseline); about one timing in a hundred has a
// not_converged warning.
func Synthetic(cases, impls int, job string, at time.Time, seed uint64) *result.Results {
	rng := rand.New(rand.NewPCG(seed, 7))
	fin := at.Add(time.Hour)
	r := &result.Results{SchemaVersion: 1, JobID: job, Experiment: "scale", CreatedAt: at, FinishedAt: &fin,
		Status: result.StatusSucceeded, RunnerVersion: "dev", Mode: "gpu", SweepKeys: []string{"M", "N"},
		Env: result.Env{Host: "gpu1", OS: "linux", Arch: "amd64", Python: "3.12", Torch: "2.5.1", Triton: "3.1.0",
			CUDARuntime: "12.4", Driver: "580.1", GPUs: []result.GPU{{Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1"}}},
		Warnings: []result.Warning{}, Criteria: []result.Criterion{}}
	for k := range impls {
		r.Implementations = append(r.Implementations, fmt.Sprintf("impl%02d", k))
	}
	r.Baseline = r.Implementations[0]
	for c := range cases {
		params := map[string]any{"M": 64 * (c/100 + 1), "N": 64 * (c%100 + 1)}
		label := fmt.Sprintf("M=%d N=%d", params["M"], params["N"])
		rc := result.Case{Params: params, Label: label, Results: map[string]*result.ImplResult{}}
		base := 0.0
		for _, name := range append(append([]string{}, r.Implementations...), result.Reference) {
			med := 0.1 + rng.Float64()
			kept := make([]float64, 20)
			for s := range kept {
				kept[s] = med * (0.98 + 0.04*rng.Float64())
			}
			rc.Results[name] = &result.ImplResult{Status: result.ImplOK, Timing: &result.Timing{MedianMS: med,
				Q1MS: med * 0.99, Q3MS: med * 1.01, Samples: 20, Converged: true, StopReason: "rse", KeptSamplesMS: kept},
				Throughput: &result.Throughput{TFLOPS: 100 * med, GBps: 1000 * med}}
			if name == r.Baseline {
				base = med
			} else if name != result.Reference {
				r.Comparisons = append(r.Comparisons, result.Comparison{A: name, B: r.Baseline, Params: params, Label: label,
					Speedup: base / med, Verdict: result.VerdictSame})
			}
			if rng.IntN(100) == 0 {
				r.Warnings = append(r.Warnings, result.Warning{Kind: "not_converged", Implementation: name, Label: label, Message: "did not converge"})
			}
		}
		r.Cases = append(r.Cases, rc)
	}
	return r
}
