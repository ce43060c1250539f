// Package regress is the regression rule of xrun's results history: it
// reads one series (one implementation at one case of one experiment on
// one kind of machine, client/history) value by value, and says of each
// whether it is stable, suspect, regressed or improved against the values
// before it, or why it cannot say (insufficient, noisy, errored). It is
// pure: no I/O, no clock.
//
// The rule (docs/regressions.md says why these numbers):
//
//   - the baseline H is the last Window accepted values since the last
//     change point; with fewer than MinHistory of them a value is
//     insufficient, never an alert;
//   - a value that did not converge, or was timed on a throttled GPU or a
//     busy host, is noisy, and an implementation that did not run is
//     errored: neither is judged nor joins H;
//   - r = (x - median(H)) / (1.4826 MAD(H)); x is a suspect when r > Score
//     and x is more than Floor above median(H) (the floor also decides
//     when MAD is 0), or likewise below for an improvement;
//   - the next value of the series (a rerun at once, xrun regress
//     --confirm, or the next night) confirms a suspect when it breaches
//     the same way: both are then regressed (or improved); one that does
//     not makes the suspect a spike;
//   - stable values and improvements join H; slower suspects and
//     regressions do not, so a regression stays regressed until it is
//     fixed or a change point accepts it.
//
// Walk applies it to a series' times. WalkRelative (relative.go) applies it
// to what the host does not move: a candidate's ratio to the run's
// baseline implementation, the baseline's time over the run's host factor.
package regress

import (
	"math"
	"slices"
	"time"

	"github.com/xrun-dev/xrun/result"
)

// Rule holds the rule's parameters.
type Rule struct {
	// Window is how many accepted values the baseline holds (N).
	Window int `json:"window"`
	// MinHistory is the fewest accepted values a judgement needs.
	MinHistory int `json:"min_history"`
	// Score is the robust z-score a suspect must exceed.
	Score float64 `json:"score"`
	// Floor is the relative change a suspect must exceed as well (0.05:
	// 5 % slower than the baseline's median).
	Floor float64 `json:"floor"`
}

// Default is the rule xrun applies: N = 20, at least 10 values, r > 4 and
// a 5 % floor.
func Default() Rule { return Rule{Window: 20, MinHistory: 10, Score: 4, Floor: 0.05} }

// Status is the rule's verdict on one value.
type Status string

// Statuses, worst first.
const (
	Regressed    Status = "regressed"    // slower, confirmed by the next value
	Suspect      Status = "suspect"      // breached the rule; awaits confirmation (Direction says which way)
	Errored      Status = "errored"      // the implementation did not run (error, crash, timeout, skipped)
	Noisy        Status = "noisy"        // not converged, throttled or host busy: not judged
	Insufficient Status = "insufficient" // fewer than MinHistory accepted values before it
	Improved     Status = "improved"     // faster, confirmed by the next value
	Stable       Status = "stable"       // within the rule's bounds
)

// Spike is no status the rule gives: it is how a suspect reads once the
// next value did not confirm it (Verdict.Spike), where a figure or a
// report tells the two apart (Verdict.Shown).
const Spike Status = "spike"

// Shown is the status to show for v: Spike for a suspect the next value
// did not confirm, else v.Status.
func (v Verdict) Shown() Status {
	if v.Status == Suspect && v.Spike {
		return Spike
	}
	return v.Status
}

// Statuses lists every status, in the order reports count them.
var Statuses = []Status{Regressed, Improved, Suspect, Stable, Insufficient, Noisy, Errored}

// Directions of a breach.
const (
	Slower = "slower"
	Faster = "faster"
)

// Value is one run's reading of a series.
type Value struct {
	// Run identifies the run (a job id).
	Run string    `json:"run"`
	At  time.Time `json:"at"`
	// MedianMS is the timing's median; Q1MS and Q3MS its quartiles.
	MedianMS float64 `json:"median_ms"`
	Q1MS     float64 `json:"q1_ms,omitempty"`
	Q3MS     float64 `json:"q3_ms,omitempty"`
	// Errored says why the implementation has no timing ("" when it has).
	Errored string `json:"errored,omitempty"`
	// Noisy says why the timing is not to be judged: not converged,
	// throttled ("" when it is clean).
	Noisy string `json:"noisy,omitempty"`
	// ChangePoint starts a new baseline at this value (an accepted change).
	ChangePoint bool `json:"change_point,omitempty"`
	// Samples are the kept samples of the timing, for the rank test.
	Samples []float64 `json:"-"`
	// Config is the config each autotuned kernel ran with
	// (result.AutotuneSummary; "" when none was recorded).
	Config string `json:"config,omitempty"`
	// Baseline is the implementation the run measured speedups against
	// (results.json's baseline; "" when it names none): the relative rule
	// judges the other implementations on their ratio to it.
	Baseline string `json:"-"`
}

// Verdict is the rule's reading of one value.
type Verdict struct {
	Status Status `json:"status"`
	// Direction is Slower or Faster for a suspect, regressed or improved value.
	Direction string `json:"direction,omitempty"`
	// Reason says why a value is noisy or errored.
	Reason string `json:"reason,omitempty"`
	// Baseline is how many values H held; Median and MAD are its median
	// and median absolute deviation (unscaled), in ms.
	Baseline int     `json:"baseline"`
	Median   float64 `json:"median_ms,omitempty"`
	MAD      float64 `json:"mad_ms,omitempty"`
	// Score is the robust z-score r; when MAD is 0 and the value differs
	// from the median it is ±math.MaxFloat64 (JSON has no infinity).
	Score float64 `json:"score"`
	// Change is x / median(H) - 1.
	Change float64 `json:"change"`
	// Confirms is the run of the suspect this value confirmed, and
	// ConfirmedBy, on that suspect, the run that confirmed it.
	Confirms    string `json:"confirms,omitempty"`
	ConfirmedBy string `json:"confirmed_by,omitempty"`
	// Since, on a value that stays regressed (or improved) after the
	// breach was confirmed, is the run whose value confirmed it.
	Since string `json:"since,omitempty"`
	// Spike is set on a suspect whose next value did not confirm it.
	Spike bool `json:"spike,omitempty"`
	// PValue is the two-sided Mann-Whitney p-value of this value's kept
	// samples against those of the latest value in H: supporting
	// evidence, never the trigger (nil without enough samples).
	PValue *float64 `json:"p_value,omitempty"`
	// Accepted says the value joined the baseline of the values after it.
	Accepted bool `json:"accepted"`

	// The relative rule (WalkRelative). Median, MAD, Score and Change above
	// are of the time; the status is of the reading Basis names:
	// BasisRatio, a candidate's ratio to the run's baseline implementation;
	// BasisHost, the time over the host factor; BasisTime (or empty, from
	// Walk), the time itself.
	Basis string `json:"basis,omitempty"`
	// Relative is the judged reading when Basis is ratio or host.
	Relative *Reading `json:"relative,omitempty"`
	// HostFactor is the median, over the implementations timed in the run
	// at this case, of time / their series' recent median: 1.09 when the
	// host made all of them 9 % slower (0: fewer than two had one).
	HostFactor float64 `json:"host_factor,omitempty"`
	// Host says that the time breached the rule's bounds but the judged
	// reading did not: the host moved, not the implementation.
	Host string `json:"host,omitempty"`
	// NeverConverged is set on a value that did not converge when no value
	// of its series before it did: the series has no baseline and is never
	// judged until its timings converge.
	NeverConverged bool `json:"never_converged,omitempty"`
	// NeverJudged is set on a noisy value when no value of its series
	// before it was clean (for any reason: Reason says this one's): the
	// series has no baseline and has never been judged.
	NeverJudged bool `json:"never_judged,omitempty"`
	// ConfigChange says, of a value that breached the rule's bounds,
	// which autotuned kernels ran another config than in the baseline's
	// latest run ("config changed: matmul_kernel 128x256x64/w8/s3 →
	// 128x64x32/w4/s4"): the moved time with its reason.
	ConfigChange string `json:"config_change,omitempty"`
}

// AsReported is the verdict the night of its value reported: a walk of
// the whole series also knows what later values made of it (a suspect the
// next value confirmed, ConfirmedBy; or did not, a spike), which that
// night's regress did not; the rule is otherwise causal.
func (v Verdict) AsReported() Verdict {
	if v.ConfirmedBy != "" {
		v.Status, v.ConfirmedBy = Suspect, ""
	}
	v.Spike = false
	return v
}

// Walk applies the rule to a series in time order and returns one verdict
// per value. A verdict can change when a later value confirms it (a
// suspect becomes regressed) or does not (a spike), so the whole series is
// read each time.
func (ru Rule) Walk(vals []Value) []Verdict {
	out, _ := ru.walk(vals, nil, &State{})
	return out
}

// walk applies the rule to the judged values vals, from st (the rule's
// state after the values before them), and leaves st as it stands after
// them. With times (the same series' own values, when vals are readings
// made of them: ratios, times over a host factor), the verdicts' Median,
// MAD, Score and Change are of the times over the same baseline runs and
// Relative is the judged reading; without, vals are the times. The
// outcome, when not nil, is what vals made of st's pending suspect.
func (ru Rule) walk(vals, times []Value, st *State) ([]Verdict, *Outcome) {
	relative := times != nil
	if !relative {
		times = vals
	}
	out := make([]Verdict, len(vals))
	var outcome *Outcome
	// pending is the index of the suspect that awaits its next value: -1
	// none, -2 st.Pending's, a value before vals.
	pending := -1
	if st.Pending != nil {
		pending = -2
	}
	pendingDir := func() string {
		if pending == -2 {
			return st.Pending.Direction
		}
		return out[pending].Direction
	}
	spike := func() {
		switch {
		case pending == -2:
			outcome = &Outcome{Run: st.Pending.Run, Spike: true}
		case pending >= 0:
			out[pending].Spike = true
		}
	}
	for i, v := range vals {
		if v.ChangePoint {
			st.Base, st.LastSamples, st.LastConfig, pending, st.Confirmed = nil, nil, "", -1, ""
		}
		if t := times[i]; t.Errored == "" && t.Noisy == "" && t.MedianMS > 0 {
			st.Timed = true
		}
		switch {
		case v.Errored != "":
			out[i] = Verdict{Status: Errored, Reason: v.Errored}
			continue
		case v.Noisy != "":
			out[i] = Verdict{Status: Noisy, Reason: v.Noisy, NeverJudged: !st.Timed, NeverConverged: !st.Timed && times[i].Noisy == NotConverged}
			continue
		case v.MedianMS <= 0:
			out[i] = Verdict{Status: Errored, Reason: "no timing"}
			continue
		}
		accept := func() {
			st.Base = last(append(st.Base, Accepted{Value: v.MedianMS, Time: times[i].MedianMS}), ru.Window)
			st.LastSamples, st.LastConfig = times[i].Samples, times[i].Config
		}
		h := st.Base[max(0, len(st.Base)-ru.Window):]
		vd := Verdict{Baseline: len(h)}
		if relative {
			vd.Relative = &Reading{Value: v.MedianMS}
		}
		if len(h) < ru.MinHistory {
			vd.Status, vd.Accepted = Insufficient, true
			out[i] = vd
			accept()
			pending, st.Confirmed = -1, ""
			continue
		}
		xs, ts := make([]float64, len(h)), make([]float64, len(h))
		for k, a := range h {
			xs[k], ts[k] = a.Value, a.Time
		}
		judged := readingOf(v.MedianMS, xs)
		abs := readingOf(times[i].MedianMS, ts)
		vd.Median, vd.MAD, vd.Score, vd.Change = abs.Median, abs.MAD, abs.Score, abs.Change
		if relative {
			vd.Relative = &judged
		}
		if p, ok := MannWhitney(times[i].Samples, st.LastSamples); ok {
			vd.PValue = &p
		}
		dir := ""
		switch {
		case judged.Score > ru.Score && judged.Change > ru.Floor:
			dir = Slower
		case judged.Score < -ru.Score && judged.Change < -ru.Floor:
			dir = Faster
		}
		confirmedStatus := Regressed
		if dir == Faster {
			confirmedStatus = Improved
		}
		switch {
		case dir == "":
			vd.Status = Stable
			spike()
			pending, st.Confirmed = -1, ""
		case st.Confirmed == dir:
			vd.Status, vd.Direction, vd.Since = confirmedStatus, dir, st.Since
		case pending != -1 && pendingDir() == dir:
			if pending == -2 {
				vd.Confirms = st.Pending.Run
				outcome = &Outcome{Run: st.Pending.Run, Status: confirmedStatus, ConfirmedBy: v.Run}
			} else {
				vd.Confirms = vals[pending].Run
				out[pending].Status, out[pending].ConfirmedBy = confirmedStatus, v.Run
			}
			vd.Status, vd.Direction = confirmedStatus, dir
			pending, st.Confirmed, st.Since = -1, dir, v.Run
		default:
			spike()
			vd.Status, vd.Direction = Suspect, dir
			pending, st.Confirmed = i, ""
		}
		if dir != "" {
			vd.ConfigChange = result.AutotuneSummaryChange(st.LastConfig, times[i].Config)
		}
		// A slower value never joins the baseline: a regression stays one
		// until it is fixed or accepted with a change point.
		vd.Accepted = dir != Slower
		if vd.Accepted {
			accept()
		}
		out[i] = vd
	}
	switch {
	case pending >= 0:
		st.Pending = &Pending{Run: vals[pending].Run, Direction: out[pending].Direction}
	case pending == -1:
		st.Pending = nil
	}
	return out, outcome
}

// score is the robust z-score of x against a baseline's median and MAD.
func score(x, median, mad float64) float64 {
	d := x - median
	sigma := 1.4826 * mad
	switch {
	case sigma > 0:
		return d / sigma
	case d > 0:
		return math.MaxFloat64
	case d < 0:
		return -math.MaxFloat64
	}
	return 0
}

// Band is the range of values a series' baseline calls stable: beyond
// Score robust standard deviations and beyond the floor, on both sides.
func (ru Rule) Band(median, mad float64) (lo, hi float64) {
	half := math.Max(ru.Score*1.4826*mad, ru.Floor*median)
	return median - half, median + half
}

// MedianMAD returns the median of xs and the median absolute deviation
// from it (unscaled). xs is not modified.
func MedianMAD(xs []float64) (median, mad float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	median = medianOf(slices.Clone(xs))
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - median)
	}
	return median, medianOf(dev)
}

func medianOf(x []float64) float64 {
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}
