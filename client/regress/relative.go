package regress

import (
	"fmt"
	"math"
	"strings"
)

// The relative rule. Every implementation of a run is timed on the same
// machine in the same run, so a busy or slower host moves all of them
// alike; the rule judges what the host does not move (docs/regressions.md,
// "Relative judgements"):
//
//   - a candidate (an implementation other than the run's baseline) is
//     judged on its ratio to the baseline's time in the same run at the
//     same case: the ratio series goes through Walk's rule (score, floor,
//     confirmation); a run without a clean baseline timing gives no ratio
//     and the value is noisy;
//   - the baseline (and every implementation of runs that name none) is
//     judged on its time over the host factor of its run and case: the
//     median, over the implementations timed there, of time / the median
//     of its series' last Window clean values (at least MinHistory of them
//     and two implementations; else the time itself);
//   - a time that breached the rule's bounds when its judged reading did
//     not moved with the host: stable, and the verdict says so.

// Bases of a judgement (Verdict.Basis).
const (
	BasisRatio = "ratio" // a candidate's time over the run's baseline's
	BasisHost  = "host"  // the time over the run's host factor
	BasisTime  = "time"  // the time alone (no host factor for the run)
)

// NotConverged is the noisy reason of a timing that did not converge.
const NotConverged = "did not converge"

// Series is one series with what the relative rule needs of it.
type Series struct {
	// Group names the case and the kind of machine: the series of one
	// group were timed side by side, one value each per run. Runs are
	// matched by their values' Run and At.
	Group          string
	Implementation string
	Values         []Value
}

// Reading is a judged reading of a value other than its time: the ratio
// to the run's baseline, or the time over the host factor.
type Reading struct {
	// Of says what was read: "ratio to <baseline>" or "time / host factor".
	Of    string  `json:"of"`
	Value float64 `json:"value"`
	// Median and MAD are those of the reading over the baseline H (the
	// same runs as the verdict's), Score its robust z-score and Change
	// Value / Median - 1.
	Median float64 `json:"median,omitempty"`
	MAD    float64 `json:"mad,omitempty"`
	Score  float64 `json:"score"`
	Change float64 `json:"change"`
}

type runKey struct {
	run string
	at  int64
}

func keyOf(v Value) runKey { return runKey{v.Run, v.At.UnixNano()} }

func clean(v Value) bool { return v.Errored == "" && v.Noisy == "" && v.MedianMS > 0 }

// WalkRelative applies the relative rule to every series (a group's series
// together, each in time order) and returns one verdict per value, in the
// order of series and values given.
func (ru Rule) WalkRelative(series []Series) [][]Verdict {
	states := make([]*State, len(series))
	for i := range states {
		states[i] = &State{}
	}
	out, _ := ru.WalkRelativeFrom(states, series)
	return out
}

// WalkRelativeFrom is WalkRelative resumed: states[i] is series i's State
// after its values before these (a new State for a series read from its
// start), and is left as it stands after them. outcomes[i], when not nil,
// is what series i's values made of the suspect its state held, for the
// verdict of that earlier value.
func (ru Rule) WalkRelativeFrom(states []*State, series []Series) (verdicts [][]Verdict, outcomes []*Outcome) {
	factors := ru.hostFactors(series, states)
	// The groups' series by implementation, and each series' values by run.
	byRun := make([]map[runKey]int, len(series))
	impls := map[string]map[string]int{} // group -> implementation -> series
	for s, ser := range series {
		byRun[s] = map[runKey]int{}
		for i, v := range ser.Values {
			byRun[s][keyOf(v)] = i
		}
		if impls[ser.Group] == nil {
			impls[ser.Group] = map[string]int{}
		}
		impls[ser.Group][ser.Implementation] = s
	}
	out := make([][]Verdict, len(series))
	outcomes = make([]*Outcome, len(series))
	for s, ser := range series {
		rel := make([]Value, len(ser.Values))
		bases := make([]string, len(ser.Values))
		of := make([]string, len(ser.Values))
		hf := make([]float64, len(ser.Values))
		lastBasis := states[s].LastBasis
		for i, v := range ser.Values {
			r := v
			r.Samples = nil
			k := keyOf(v)
			f := ru.hostFactor(factors[ser.Group][k], ser.Implementation)
			hf[i] = f
			basis := BasisTime
			switch base := v.Baseline; {
			case base != "" && base != ser.Implementation:
				basis = BasisRatio + ":" + base
				of[i] = "ratio to " + base
				var bv Value
				if bs, ok := impls[ser.Group][base]; ok {
					if j, ok := byRun[bs][k]; ok {
						bv = series[bs].Values[j]
					}
				}
				// A change point of the baseline's series changes every ratio.
				r.ChangePoint = r.ChangePoint || bv.ChangePoint
				switch {
				case !clean(v):
				case !clean(bv):
					r.Noisy = fmt.Sprintf("no ratio: the baseline %s has no clean timing in this run", base)
				default:
					r.MedianMS = v.MedianMS / bv.MedianMS
				}
			case f > 0:
				basis, of[i] = BasisHost, "time / host factor"
				r.MedianMS = v.MedianMS / f
			}
			bases[i] = basis
			// A reading on another scale (a ratio to another baseline, the
			// spec's baseline changed) starts a new baseline; the time and
			// the time over the host factor are one scale.
			if clean(r) {
				if lastBasis != "" && scale(basis) != scale(lastBasis) {
					r.ChangePoint = true
				}
				lastBasis = basis
			}
			rel[i] = r
		}
		states[s].LastBasis = lastBasis
		vs, outcome := ru.walk(rel, ser.Values, states[s])
		outcomes[s] = outcome
		for i := range vs {
			vd := &vs[i]
			vd.HostFactor = round(hf[i])
			kind := baseKind(bases[i])
			if vd.Relative != nil {
				vd.Basis, vd.Relative.Of = kind, of[i]
				if kind == BasisTime {
					vd.Relative = nil
				}
			}
			if vd.Status == Stable || vd.Status == Insufficient {
				vd.Host = ru.hostNote(*vd, kind)
			}
		}
		out[s] = vs
	}
	return out, outcomes
}

// scale is what a basis is measured in: the time (ms), or the ratio to one
// implementation.
func scale(b string) string {
	if b == BasisHost {
		return BasisTime
	}
	return b
}

// baseKind is the basis without the baseline's name.
func baseKind(b string) string {
	if _, ok := strings.CutPrefix(b, BasisRatio+":"); ok {
		return BasisRatio
	}
	return b
}

// hostNote says why a time that breached the rule's bounds is not a
// regression: its judged reading did not.
func (ru Rule) hostNote(vd Verdict, basis string) string {
	if basis == BasisTime || vd.Median <= 0 {
		return ""
	}
	if !(vd.Score > ru.Score && vd.Change > ru.Floor) && !(vd.Score < -ru.Score && vd.Change < -ru.Floor) {
		return ""
	}
	word := "slower"
	if vd.Change < 0 {
		word = "faster"
	}
	if vd.HostFactor > 0 {
		return fmt.Sprintf("the host was %s (all implementations %+.0f %%)", word, 100*(vd.HostFactor-1))
	}
	return fmt.Sprintf("the host was %s (the ratio to the baseline moved %+.1f %%)", word, 100*vd.Relative.Change)
}

// round keeps four decimals of a host factor, for reports.
func round(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// hostFactors returns, per group and run, each implementation's time there
// over the median of its series' last Window clean values (at least
// MinHistory of them, since the last change point), each series' from its
// state's (State.Recent), which it leaves as it stands after the values.
func (ru Rule) hostFactors(series []Series, states []*State) map[string]map[runKey]map[string]float64 {
	ratios := map[string]map[runKey]map[string]float64{}
	for s, ser := range series {
		if ratios[ser.Group] == nil {
			ratios[ser.Group] = map[runKey]map[string]float64{}
		}
		recent := states[s].Recent
		for _, v := range ser.Values {
			if v.ChangePoint {
				recent = nil
			}
			if !clean(v) {
				continue
			}
			if len(recent) >= ru.MinHistory {
				m, _ := MedianMAD(recent[max(0, len(recent)-ru.Window):])
				k := keyOf(v)
				if ratios[ser.Group][k] == nil {
					ratios[ser.Group][k] = map[string]float64{}
				}
				ratios[ser.Group][k][ser.Implementation] = v.MedianMS / m
			}
			recent = last(append(recent, v.MedianMS), ru.Window)
		}
		states[s].Recent = recent
	}
	return ratios
}

// hostFactor is the run's host factor for impl's series, from every
// implementation's move there (hostFactors); 0 (judge the time) when fewer
// than two implementations moved. When another implementation moved as
// impl did (within the rule's floor), the host explains the move: the
// median of all the moves. When none did, the host moved no more than the
// implementation that moved least, and that move is the factor: a candidate
// slowed alone must not make the baseline beside it read faster (the median
// of two moves is half-way), and a baseline slowed alone is still judged
// against the others' hosts.
func (ru Rule) hostFactor(moves map[string]float64, impl string) float64 {
	own, ok := moves[impl]
	if !ok || len(moves) < 2 || own <= 0 {
		return 0
	}
	var all []float64
	least, corroborated := own, false
	for name, m := range moves {
		if m <= 0 {
			continue
		}
		all = append(all, m)
		if name == impl {
			continue
		}
		if math.Abs(m/own-1) <= ru.Floor {
			corroborated = true
		}
		if math.Abs(math.Log(m)) < math.Abs(math.Log(least)) {
			least = m
		}
	}
	if corroborated {
		f, _ := MedianMAD(all)
		return f
	}
	return least
}

// readingOf is the robust reading of x against the values of H.
func readingOf(x float64, h []float64) Reading {
	med, mad := MedianMAD(h)
	r := Reading{Value: x, Median: med, MAD: mad, Score: score(x, med, mad)}
	if med > 0 {
		r.Change = x/med - 1
	}
	if math.IsNaN(r.Change) {
		r.Change = 0
	}
	return r
}
