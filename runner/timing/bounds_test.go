package timing

import (
	"context"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/runner/harness"
)

// An implementation that reports its own timings (1e300 ms, 1e-300 ms, 0)
// is refused on the case with a sentence saying why; the honest ones
// beside it are timed as ever.
func TestAbsurdSamplesRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		batch func(int, harness.Time) (*harness.Samples, error)
	}{
		{"huge", cpuBatch(1e300, 1e300)},
		{"tiny", cpuBatch(1e-300, 1e-300)},
		{"zero", cpuBatch(0, 0)},
		{"one of many", cpuBatch(1, 1, 2e9)},
		{"kernel span", gpuBatch([]float64{1, 1}, []float64{1, 1e300})},
		{"warm-up", func(n int, cmd harness.Time) (*harness.Samples, error) {
			sm, _ := cpuBatch(1, 1)(n, cmd)
			sm.WarmupMS = 1e308
			return sm, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, l, impls := setup(Config{}, &fakeSampler{name: "reference", next: cpuBatch(1, 1)},
				&fakeSampler{name: "liar", next: tc.batch}, &fakeSampler{name: "honest", next: cpuBatch(2, 2)})
			rec := newRecorder()
			if err := l.Case(context.Background(), Case{}, impls, rec); err != nil {
				t.Fatal(err)
			}
			err := rec.failed["liar"]
			if err == nil || !strings.Contains(err.Error(), "its timing is refused") || len(rec.timed["liar"]) != 0 {
				t.Fatalf("liar: failed %v, timed %v", err, rec.timed["liar"])
			}
			if strings.Count(err.Error(), ".") > 3 || strings.Contains(err.Error(), "\n") {
				t.Errorf("not one sentence: %q", err)
			}
			for _, name := range []string{"reference", "honest"} {
				if got := rec.last(t, name); got.StopReason != analyze.ReasonConverged || rec.failed[name] != nil {
					t.Errorf("%s: %+v, failed %v", name, got, rec.failed[name])
				}
			}
		})
	}
}
