package regress

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// series makes a value per median, a night apart.
func series(medians ...float64) []Value {
	start := time.Date(2026, 1, 1, 2, 17, 0, 0, time.UTC)
	out := make([]Value, len(medians))
	for i, m := range medians {
		out[i] = Value{Run: fmt.Sprintf("n%02d", i), At: start.Add(time.Duration(i) * 24 * time.Hour), MedianMS: m}
	}
	return out
}

// noisy returns n medians around m with relative log-normal noise sigma.
func noisy(rng *rand.Rand, n int, m, sigma float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = m * math.Exp(sigma*rng.NormFloat64())
	}
	return out
}

func statuses(vs []Verdict) map[Status]int {
	n := map[Status]int{}
	for _, v := range vs {
		n[v.Status]++
	}
	return n
}

func TestOnePercentNoiseThirtyNightsNoAlert(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 22))
		vs := Default().Walk(series(noisy(rng, 30, 1.0, 0.01)...))
		n := statuses(vs)
		if n[Regressed] > 0 || n[Suspect] > 0 || n[Improved] > 0 {
			t.Fatalf("seed %d: 1%% noise gave %v", seed, n)
		}
		if n[Insufficient] != 10 || n[Stable] != 20 {
			t.Fatalf("seed %d: %v, want 10 insufficient then 20 stable", seed, n)
		}
	}
}

func TestTenPercentStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 22))
	meds := append(noisy(rng, 20, 1.0, 0.01), noisy(rng, 3, 1.10, 0.01)...)
	vals := series(meds...)
	// Evaluated the night of the step, with nothing after it yet.
	first := Default().Walk(vals[:21])[20]
	if first.Status != Suspect || first.Direction != Slower || first.Change < 0.05 || first.Score < 4 {
		t.Fatalf("the step's first night: %+v, want a slower suspect", first)
	}
	vs := Default().Walk(vals)
	if vs[20].Status != Regressed || vs[20].ConfirmedBy != "n21" {
		t.Errorf("the step's first night once confirmed: %+v", vs[20])
	}
	if vs[21].Status != Regressed || vs[21].Confirms != "n20" {
		t.Errorf("the confirming night: %+v", vs[21])
	}
	if vs[22].Status != Regressed || vs[22].Accepted || vs[22].Since != "n21" {
		t.Errorf("a regression stays one until it is accepted, since the night that confirmed it: %+v", vs[22])
	}
	// Accepting the change starts a new baseline there.
	vals[20].ChangePoint = true
	vs = Default().Walk(vals)
	for _, v := range vs[20:] {
		if v.Status != Insufficient {
			t.Errorf("after a change point: %+v, want insufficient", v)
		}
	}
}

func TestOneNightSpikeRevertsNoRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 22))
	meds := noisy(rng, 25, 1.0, 0.01)
	meds[20] = 1.25
	vs := Default().Walk(series(meds...))
	if vs[20].Status != Suspect || !vs[20].Spike || vs[20].Accepted {
		t.Errorf("the spike: %+v, want a suspect marked spike, kept out of the baseline", vs[20])
	}
	n := statuses(vs)
	if n[Regressed] != 0 || n[Stable] != 14 {
		t.Errorf("statuses %v", n)
	}
}

func TestTooLittleHistory(t *testing.T) {
	vs := Default().Walk(series(1, 1, 1, 1, 1, 1, 1, 1, 1, 5))
	for i, v := range vs {
		if v.Status != Insufficient || v.Baseline != i {
			t.Errorf("value %d: %+v, want insufficient with %d before it", i, v, i)
		}
	}
}

// Timings quantized to the timer's resolution give MAD 0: the 5 % floor
// decides alone.
func TestQuantizedTimingsMADZero(t *testing.T) {
	meds := []float64{1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.1, 1.0, 1.0}
	vals := series(append(meds, 1.04, 1.0, 1.06, 1.06)...)
	vs := Default().Walk(vals)
	if v := vs[12]; v.Status != Stable || v.MAD != 0 || v.Score != math.MaxFloat64 {
		t.Errorf("4 %% above a MAD-0 baseline: %+v, want stable (under the floor)", v)
	}
	if v := vs[14]; v.Status != Regressed || v.ConfirmedBy != "n15" {
		t.Errorf("6 %% above a MAD-0 baseline: %+v, want regressed once confirmed", v)
	}
}

func TestImprovement(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 22))
	meds := append(noisy(rng, 15, 1.0, 0.01), noisy(rng, 14, 0.8, 0.01)...)
	vs := Default().Walk(series(meds...))
	if vs[15].Status != Improved || vs[15].Direction != Faster || vs[16].Status != Improved || vs[16].Confirms != "n15" {
		t.Errorf("the first faster nights: %+v %+v", vs[15], vs[16])
	}
	if !vs[15].Accepted {
		t.Error("an improvement stays out of the baseline")
	}
	// Faster values join the baseline: once they are its majority, the new
	// speed is stable, and a return to the old one is caught.
	if last := vs[len(vs)-1]; last.Status != Stable {
		t.Errorf("after 14 faster nights: %+v, want stable", last)
	}
	back := series(append(meds, 1.0, 1.0)...)
	vs = Default().Walk(back)
	if v := vs[len(vs)-1]; v.Status != Regressed {
		t.Errorf("back to the old speed after the improvement: %+v, want regressed", v)
	}
}

func TestNoisyAndErroredAreNotJudged(t *testing.T) {
	vals := series(1, 1.01, 0.99, 1, 1.02, 0.98, 1, 1.01, 0.99, 1, 1.3, 2, 0, 1.3)
	vals[11].Noisy = "not converged"
	vals[12].Errored = "crashed"
	vs := Default().Walk(vals)
	if vs[11].Status != Noisy || vs[12].Status != Errored || vs[11].Accepted || vs[12].Accepted {
		t.Errorf("noisy %+v, errored %+v", vs[11], vs[12])
	}
	// The suspect's next judged value confirms it: noise in between does not break the pair.
	if vs[10].Status != Regressed || vs[13].Status != Regressed || vs[13].Confirms != "n10" {
		t.Errorf("suspect %+v, confirmation %+v", vs[10], vs[13])
	}
}

func TestBand(t *testing.T) {
	lo, hi := Default().Band(1, 0.01)
	if math.Abs(hi-1.059304) > 1e-6 || math.Abs(lo-0.940696) > 1e-6 {
		t.Errorf("band of MAD 1 %% = [%v, %v], want 4 x 1.4826 x MAD", lo, hi)
	}
	lo, hi = Default().Band(2, 0)
	if lo != 1.9 || hi != 2.1 {
		t.Errorf("band of MAD 0 = [%v, %v], want the 5 %% floor", lo, hi)
	}
}

func TestMedianMAD(t *testing.T) {
	x := []float64{1, 2, 3, 4, 100}
	m, mad := MedianMAD(x)
	if m != 3 || mad != 1 || x[4] != 100 {
		t.Errorf("MedianMAD = %v, %v", m, mad)
	}
}

func TestMannWhitney(t *testing.T) {
	// Complete separation of 3 and 3: U = 0, exact two-sided p = 2/C(6,3).
	if p, ok := MannWhitney([]float64{1, 2, 3}, []float64{4, 5, 6}); !ok || math.Abs(p-0.1) > 1e-12 {
		t.Errorf("p = %v, want 0.1", p)
	}
	// Interleaved: no evidence.
	if p, _ := MannWhitney([]float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}); p < 0.6 {
		t.Errorf("interleaved p = %v", p)
	}
	// Exact: a = {1..6, 15, 16} against b = {7..14} gives U = 16, and 675
	// of the C(16, 8) = 12870 arrangements have U <= 16 (counted by
	// enumeration): p = 2 x 675 / 12870.
	a := []float64{1, 2, 3, 4, 5, 6, 15, 16}
	b := []float64{7, 8, 9, 10, 11, 12, 13, 14}
	if p, _ := MannWhitney(a, b); math.Abs(p-2*675.0/12870) > 1e-12 {
		t.Errorf("n=8 U=16 p = %v, want %v", p, 2*675.0/12870)
	}
	// Large samples, a 5 % shift of tight timings: a tiny p.
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := noisy(rng, 64, 1.0, 0.005), noisy(rng, 64, 1.05, 0.005)
	if p, ok := MannWhitney(x, y); !ok || p > 1e-10 {
		t.Errorf("64 vs 64 shifted 5 %%: p = %v", p)
	}
	if p, _ := MannWhitney(x, noisy(rng, 64, 1.0, 0.005)); p < 0.001 {
		t.Errorf("64 vs 64 from one distribution: p = %v", p)
	}
	// Ties, as quantized timings give: the normal approximation with the tie correction.
	if p, ok := MannWhitney([]float64{1, 1, 1, 2, 2}, []float64{2, 2, 3, 3, 3}); !ok || p > 0.05 || p < 0.001 {
		t.Errorf("tied p = %v", p)
	}
	if p, ok := MannWhitney([]float64{1, 1, 1}, []float64{1, 1, 1}); !ok || p != 1 {
		t.Errorf("all tied p = %v", p)
	}
	if _, ok := MannWhitney([]float64{1, 2}, []float64{3, 4, 5}); ok {
		t.Error("a p-value from 2 samples")
	}
}

// A suspect the next value did not confirm shows as a spike; every other
// verdict as its status.
func TestShown(t *testing.T) {
	for _, tt := range []struct {
		v    Verdict
		want Status
	}{
		{Verdict{Status: Suspect, Spike: true}, Spike},
		{Verdict{Status: Suspect}, Suspect},
		{Verdict{Status: Stable}, Stable},
	} {
		if got := tt.v.Shown(); got != tt.want {
			t.Errorf("%+v shown as %s, want %s", tt.v, got, tt.want)
		}
	}
}
