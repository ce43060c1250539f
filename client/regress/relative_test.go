package regress

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// nights makes a group of series timed side by side: impls[k] at median
// base[k], one run a night, each night's times multiplied by host[n] (the
// machine's load) and by slow[impl][n] when set, with log-normal noise
// sigma. The first implementation is every run's baseline.
func nights(rng *rand.Rand, impls []string, base []float64, host []float64, slow map[string]map[int]float64, sigma float64) []Series {
	out := make([]Series, len(impls))
	for k, name := range impls {
		meds := noisy(rng, len(host), base[k], sigma)
		for n := range meds {
			meds[n] *= host[n]
			if f, ok := slow[name][n]; ok {
				meds[n] *= f
			}
		}
		vals := series(meds...)
		for n := range vals {
			vals[n].Baseline = impls[0]
		}
		out[k] = Series{Group: "M=64", Implementation: name, Values: vals}
	}
	return out
}

func flat(n int, f float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func count(vs []Verdict, st Status) int {
	n := 0
	for _, v := range vs {
		if v.Status == st {
			n++
		}
	}
	return n
}

var trio = []string{"control", "candidate", "reference"}

// A host 9 % slower moves every implementation: the absolute rule calls
// each a suspect, the relative rule none, and says the host was slower.
func TestHostSlowerIsNotARegression(t *testing.T) {
	for _, impls := range [][]string{trio, trio[:2]} {
		rng := rand.New(rand.NewPCG(11, 22))
		host := append(flat(20, 1), 1.09, 1.09, 1.09)
		ser := nights(rng, impls, []float64{2, 1.5, 0.4}, host, nil, 0.01)
		if abs := Default().Walk(ser[0].Values); abs[20].Status != Regressed {
			t.Fatalf("the absolute rule on the control: %+v, want regressed (the problem this rule solves)", abs[20])
		}
		got := Default().WalkRelative(ser)
		for k, vs := range got {
			for n := 20; n < 23; n++ {
				v := vs[n]
				if v.Status != Stable || !strings.Contains(v.Host, "the host was slower (all implementations +") {
					t.Errorf("%d implementations, %s night %d: %s %q (%+v)", len(impls), impls[k], n, v.Status, v.Host, v)
				}
				if v.Change < 0.07 || v.HostFactor < 1.07 || v.HostFactor > 1.11 {
					t.Errorf("%s night %d: change %.3f, host factor %.3f", impls[k], n, v.Change, v.HostFactor)
				}
			}
		}
		if b := got[0][21].Basis; b != BasisHost {
			t.Errorf("the baseline's basis %q, want host", b)
		}
		if b := got[1][21]; b.Basis != BasisRatio || b.Relative == nil || b.Relative.Of != "ratio to control" {
			t.Errorf("the candidate's reading %+v", b.Relative)
		}
	}
}

// The candidate alone 20 % slower, on a busy host: suspect on its first
// night, regressed once the next night agrees; the control stable.
func TestCandidateSlowerAloneIsConfirmed(t *testing.T) {
	for _, impls := range [][]string{trio, trio[:2]} {
		rng := rand.New(rand.NewPCG(12, 22))
		host := append(flat(20, 1), 1.3, 1.1)
		slow := map[string]map[int]float64{"candidate": {20: 1.2, 21: 1.2}}
		ser := nights(rng, impls, []float64{2, 1.5, 0.4}, host, slow, 0.01)
		first := Default().WalkRelative(trimmed(ser, 21))
		if v := first[1][20]; v.Status != Suspect || v.Direction != Slower || v.Relative.Change < 0.15 {
			t.Fatalf("%d implementations: the candidate's first slow night: %+v %+v, want a slower suspect", len(impls), v, v.Relative)
		}
		got := Default().WalkRelative(ser)
		if v := got[1][20]; v.Status != Regressed || v.ConfirmedBy != "n21" {
			t.Errorf("%d implementations: once the next night agrees: %+v", len(impls), v)
		}
		if v := got[1][21]; v.Status != Regressed || v.Confirms != "n20" {
			t.Errorf("%d implementations: the confirming night: %+v", len(impls), v)
		}
		for k := range impls {
			if k != 1 && count(got[k], Regressed)+count(got[k], Suspect) > 0 {
				t.Errorf("%d implementations: %s flagged: %+v", len(impls), impls[k], got[k][20:])
			}
		}
		// The control moved with the host alone: with a third
		// implementation (the reference) beside it, the median of the
		// moves; with two, the smaller move (the candidate's is the
		// host's and its own). Stable either way, not faster.
		if v := got[0][21]; v.Status != Stable {
			t.Errorf("%d implementations: the control on the second night: %s, want stable", len(impls), v.Status)
		}
	}
}

// The baseline alone 20 % slower: every candidate's ratio falls alike, and
// the baseline's time over the host factor breaches: caught, confirmed the
// next night; the candidates are not regressed.
func TestBaselineSlowerAloneIsCaught(t *testing.T) {
	for _, impls := range [][]string{trio, trio[:2]} {
		rng := rand.New(rand.NewPCG(13, 22))
		slow := map[string]map[int]float64{"control": {20: 1.2, 21: 1.2}}
		ser := nights(rng, impls, []float64{2, 1.5, 0.4}, flat(22, 1), slow, 0.01)
		got := Default().WalkRelative(ser)
		if v := got[0][20]; v.Status != Regressed || v.Basis != BasisHost || v.Direction != Slower {
			t.Errorf("%d implementations: the baseline's slow night: %+v", len(impls), v)
		}
		for k := 1; k < len(impls); k++ {
			if n := count(got[k], Regressed) + count(got[k], Suspect); n > 0 {
				t.Errorf("%d implementations: %s flagged %d times", len(impls), impls[k], n)
			}
		}
	}
}

// Ten nights at loads that move every time by up to 60 %: the absolute
// rule flags the control, the relative rule nothing; then the candidate
// 20 % slower on two busy nights is confirmed.
func TestBusyHostNights(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 22))
	host := flat(12, 1)
	for n := 0; n < 10; n++ {
		host = append(host, 1+0.6*rng.Float64())
	}
	host = append(host, 1.4, 1.25)
	slow := map[string]map[int]float64{"candidate": {22: 1.2, 23: 1.2}}
	ser := nights(rng, trio, []float64{2, 1.5, 0.4}, host, slow, 0.01)
	abs := Default().Walk(ser[0].Values)
	if count(abs, Regressed) == 0 {
		t.Errorf("the absolute rule flags no busy night of the control: %v", statuses(abs))
	}
	got := Default().WalkRelative(ser)
	for k, vs := range got {
		if n := count(vs[:22], Regressed) + count(vs[:22], Suspect); n > 0 {
			t.Errorf("%s flagged on %d busy nights: %v", trio[k], n, statuses(vs[:22]))
		}
	}
	if v := got[1][22]; v.Status != Regressed {
		t.Errorf("the candidate's slowdown on a busy night: %+v %+v", v, v.Relative)
	}
	if n := count(got[0], Regressed); n > 0 {
		t.Errorf("the control regressed %d times", n)
	}
}

// A candidate whose run has no clean baseline timing has no ratio: noisy,
// not judged, and it neither confirms nor clears a suspect.
func TestNoRatioWithoutTheBaseline(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 22))
	slow := map[string]map[int]float64{"candidate": {20: 1.2, 21: 1.2, 22: 1.2}}
	ser := nights(rng, trio[:2], []float64{2, 1.5}, flat(23, 1), slow, 0.01)
	ser[0].Values[21].Noisy = NotConverged
	got := Default().WalkRelative(ser)
	if v := got[1][21]; v.Status != Noisy || !strings.Contains(v.Reason, "no ratio: the baseline control") {
		t.Errorf("without the baseline: %+v", v)
	}
	if v := got[1][20]; v.Status != Regressed || v.ConfirmedBy != "n22" {
		t.Errorf("the suspect, confirmed past the night without a ratio: %+v", v)
	}
}

// A series that never converged says so on each of its values; one that
// converged once does not.
func TestNeverConverged(t *testing.T) {
	vals := series(1, 1, 1, 1)
	for i := range vals {
		vals[i].Noisy = NotConverged
	}
	for i, v := range Default().Walk(vals) {
		if !v.NeverConverged {
			t.Errorf("value %d: %+v", i, v)
		}
	}
	vals[1].Noisy = ""
	if vs := Default().Walk(vals); !vs[0].NeverConverged || vs[2].NeverConverged {
		t.Errorf("after a converged value: %+v", vs)
	}
}

// Results that name no baseline are judged on the time over the host
// factor; with a single implementation, on the time alone.
func TestNoBaselineNamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 22))
	host := append(flat(20, 1), 1.09, 1.09)
	ser := nights(rng, trio, []float64{2, 1.5, 0.4}, host, nil, 0.01)
	for k := range ser {
		for n := range ser[k].Values {
			ser[k].Values[n].Baseline = ""
		}
	}
	for k, vs := range Default().WalkRelative(ser) {
		if v := vs[21]; v.Status != Stable || v.Basis != BasisHost {
			t.Errorf("%s: %+v", trio[k], v)
		}
	}
	alone := Default().WalkRelative(ser[:1])[0]
	if v := alone[21]; v.Status != Regressed || v.Basis != BasisTime || v.Relative != nil {
		t.Errorf("one implementation alone: %+v", v)
	}
}

// trimmed keeps each series' first n values.
func trimmed(ser []Series, n int) []Series {
	out := make([]Series, len(ser))
	for k, s := range ser {
		out[k] = s
		out[k].Values = s.Values[:n]
	}
	return out
}
