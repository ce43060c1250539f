package regress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// randomGroup is a group of series of n runs each with what moves the
// rules: steps up and down that hold (regressions, fixes), single spikes,
// a host that slows every implementation at once, errored and noisy
// values, accepted change points, autotuned configs, kept samples, runs
// that name no baseline, and runs an implementation missed.
func randomGroup(rng *rand.Rand, n int) []Series {
	impls := []string{"ref", "cand", "other"}[:2+rng.IntN(2)]
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Series, len(impls))
	host := make([]float64, n)
	for i := range host {
		host[i] = 1
		if rng.IntN(15) == 0 {
			host[i] = 1.1
		}
	}
	for k, name := range impls {
		level := 1 + float64(k)
		var vals []Value
		for i := 0; i < n; i++ {
			if rng.IntN(25) == 0 {
				level *= []float64{1.3, 0.75, 1.1}[rng.IntN(3)]
			}
			if rng.IntN(20) == 0 && k > 0 {
				continue // missed this run
			}
			x := level * host[i] * (1 + 0.01*rng.NormFloat64())
			if rng.IntN(30) == 0 {
				x *= 1.5 // a spike
			}
			v := Value{Run: fmt.Sprintf("job%04d", i), At: start.Add(time.Duration(i) * time.Hour), MedianMS: x,
				Config: fmt.Sprintf("k %dx64/w4", 32<<rng.IntN(2))}
			if rng.IntN(4) > 0 {
				v.Baseline = "ref"
			}
			switch rng.IntN(40) {
			case 0:
				v.Errored = "crashed"
			case 1:
				v.Noisy = NotConverged
			case 2:
				v.ChangePoint = true
			}
			for s := 0; s < 12; s++ {
				v.Samples = append(v.Samples, x*(1+0.02*rng.NormFloat64()))
			}
			vals = append(vals, v)
		}
		out[k] = Series{Group: "g", Implementation: name, Values: vals}
	}
	return out
}

// A walk resumed from the state of one cut short judges every value after
// the cut as the walk of the whole series does, and what it makes of the
// suspect the state held turns the short walk's verdicts into the whole
// walk's; the state survives its JSON, as the history keeps it.
func TestWalkResumedFromItsState(t *testing.T) {
	ru := Default()
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		group := randomGroup(rng, 40+rng.IntN(120))
		whole := ru.WalkRelative(group)
		cut := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(150)) * time.Hour)
		var head, tail []Series
		for _, ser := range group {
			k := 0
			for k < len(ser.Values) && !ser.Values[k].At.After(cut) {
				k++
			}
			h, tl := ser, ser
			h.Values, tl.Values = ser.Values[:k], ser.Values[k:]
			head, tail = append(head, h), append(tail, tl)
		}
		states := make([]*State, len(group))
		for i := range states {
			states[i] = &State{}
		}
		first, _ := ru.WalkRelativeFrom(states, head)
		data, err := json.Marshal(states)
		if err != nil {
			t.Fatal(err)
		}
		var kept []*State
		if err := json.Unmarshal(data, &kept); err != nil {
			t.Fatal(err)
		}
		for _, st := range kept {
			if len(st.Base) > 2*ru.Window || len(st.Recent) > 2*ru.Window {
				t.Fatalf("seed %d: a state of %d baseline and %d recent values; want at most %d", seed, len(st.Base), len(st.Recent), 2*ru.Window)
			}
		}
		second, outcomes := ru.WalkRelativeFrom(kept, tail)
		for s := range group {
			if o := outcomes[s]; o != nil {
				found := false
				for i, v := range head[s].Values {
					if v.Run == o.Run {
						o.Apply(&first[s][i])
						found = true
					}
				}
				if !found {
					t.Fatalf("seed %d: an outcome for run %s, which the head of series %d does not hold", seed, o.Run, s)
				}
			}
			got := append(first[s], second[s]...)
			if !reflect.DeepEqual(got, whole[s]) {
				for i := range got {
					if !reflect.DeepEqual(got[i], whole[s][i]) {
						t.Fatalf("seed %d, series %d, value %d of %d (cut after %d): resumed %+v; whole %+v",
							seed, s, i, len(got), len(head[s].Values), got[i], whole[s][i])
					}
				}
			}
		}
	}
}

// The clock rule resumed from its usual clocks says what it says of the
// whole series.
func TestClockNoiseResumed(t *testing.T) {
	cr := DefaultClocks()
	rng := rand.New(rand.NewPCG(3, 4))
	cs := make([]Clocks, 200)
	change := make([]bool, len(cs))
	for i := range cs {
		cs[i] = Clocks{Readings: 5, SMClockMHz: 1980 - rng.IntN(40)}
		switch rng.IntN(12) {
		case 0:
			cs[i].SMClockMHz = 1200
		case 1:
			cs[i].Readings = 0
		case 2:
			change[i] = true
		}
	}
	whole := cr.Noise(cs, change)
	for _, k := range []int{0, 1, 3, 57, 150, 199, 200} {
		st := &State{}
		got := append(cr.NoiseFrom(st, cs[:k], change[:k]), cr.NoiseFrom(st, cs[k:], change[k:])...)
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("cut at %d: resumed noise differs from the whole series'", k)
		}
	}
}
