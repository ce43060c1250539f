package result

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"

	"github.com/xrun-dev/xrun/internal/text"
)

// The bounds of the figures of a results file. The runner refuses samples
// outside MinTimingMS to MaxTimingMS (runner/timing), so no honest file
// has a timing outside them, and Decode refuses one that does: a median
// of 1.7e308 ms, written by hand or by an older runner, made the readers'
// arithmetic infinite (a plot's scale, the history's JSON, regress).
// Every other figure (work models, throughputs, speedups, parameters) but
// the unbounded ones (correctness figures, criteria, metrics, autotune records) must be within
// ±MaxFigure, far beyond any real one and far from
// float64's range, so that products and squares of two stay finite.
const (
	// MinTimingMS is 1 ns, the least a call takes; MaxTimingMS 1e9 ms,
	// 11.6 days.
	MinTimingMS = 1e-6
	MaxTimingMS = 1e9
	MaxFigure   = 1e30
)

// check refuses a document with a figure out of bounds, in one sentence
// naming the first one.
func (r *Results) check() error {
	if err := r.names(); err != nil {
		return err
	}
	for ci := range r.Cases {
		if err := r.Cases[ci].timings(ci); err != nil {
			return err
		}
		if err := r.Cases[ci].names(ci); err != nil {
			return err
		}
	}
	return figures(reflect.ValueOf(r), "")
}

// MaxName is the most bytes a name in a results file may have: the
// experiment's, an implementation's, a case's label, a parameter's name
// and a text value. A spec's names are far shorter; a file from elsewhere
// with a 10 MiB name would make every table, the history and its pages
// carry it.
const MaxName = 1024

// name refuses a name (what names it) longer than MaxName or holding a
// control character, in one sentence.
func name(what, s string) error {
	if len(s) > MaxName {
		return fmt.Errorf("%s is %d bytes long, more than the %d a name in a results file may be", what, len(s), MaxName)
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return fmt.Errorf("%s %q holds a control character, which no name may", what, s)
		}
	}
	return nil
}

// names checks the run's names: the experiment's, its implementations'
// and its baseline's.
func (r *Results) names() error {
	if err := name("experiment", r.Experiment); err != nil {
		return err
	}
	for _, n := range append(slices.Clone(r.Implementations), r.Baseline) {
		if err := name("implementation name", n); err != nil {
			return err
		}
	}
	return nil
}

// names checks the names of case ci: its label, its implementations' and
// its parameters' names and text values.
func (c *Case) names(ci int) error {
	at := fmt.Sprintf("cases[%d]", ci)
	if err := name(at+".label", c.Label); err != nil {
		return err
	}
	for n := range c.Results {
		if err := name(at+" implementation name", n); err != nil {
			return err
		}
	}
	for k, v := range c.Params {
		if err := name(at+" parameter name", k); err != nil {
			return err
		}
		if sv, ok := v.(string); ok {
			if err := name(at+".params."+k, sv); err != nil {
				return err
			}
		}
	}
	return nil
}

// CleanCase checks and cleans c, the i-th case of a document, as Decode
// checks and cleans a whole one: for a reader that decodes a document case
// by case (and its head, without the cases, with Decode).
func CleanCase(i int, c *Case) error {
	if err := c.timings(i); err != nil {
		return fmt.Errorf("decode results: %w", err)
	}
	if err := c.names(i); err != nil {
		return fmt.Errorf("decode results: %w", err)
	}
	if err := figures(reflect.ValueOf(c), fmt.Sprintf("cases[%d]", i)); err != nil {
		return fmt.Errorf("decode results: %w", err)
	}
	c.texts()
	return nil
}

// timings checks the bounds of the timings of c, the ci-th case.
func (c *Case) timings(ci int) error {
	names := make([]string, 0, len(c.Results))
	for name := range c.Results {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ir := c.Results[name]
		if ir == nil || ir.Timing == nil {
			continue
		}
		if err := ir.Timing.check(fmt.Sprintf("cases[%d].results.%s.timing", ci, name)); err != nil {
			return err
		}
	}
	return nil
}

func (t *Timing) check(path string) error {
	if t.plausible() {
		return nil
	}
	return t.refuse(path)
}

// plausible says whether every figure of t is one a call can take: the
// check without the maps and names of refuse, which says which is not.
func (t *Timing) plausible() bool {
	median := func(v float64) bool { return v == 0 || (v >= MinTimingMS && v <= MaxTimingMS) }
	span := func(vs ...float64) bool {
		for _, v := range vs {
			if !(v >= 0 && v <= MaxTimingMS) {
				return false
			}
		}
		return true
	}
	if !median(t.MedianMS) || !span(t.MeanMS, t.MinMS, t.MaxMS, t.Q1MS, t.Q3MS, t.P20MS, t.P80MS, t.StdevMS) {
		return false
	}
	for _, cs := range []*ClockSummary{t.Events, kernelClock(t.Kernel)} {
		if cs != nil && (!median(cs.MedianMS) || !span(cs.MinMS, cs.Q1MS, cs.Q3MS)) {
			return false
		}
	}
	if t.Kernel != nil && !span(t.Kernel.BusyMedianMS, t.Kernel.LaunchMS) {
		return false
	}
	for _, v := range t.KeptSamplesMS {
		if !median(v) {
			return false
		}
	}
	return true
}

// refuse names the first figure of t (at path) out of its bounds.
func (t *Timing) refuse(path string) error {
	medians := map[string]float64{"median_ms": t.MedianMS}
	spans := map[string]float64{"mean_ms": t.MeanMS, "min_ms": t.MinMS, "max_ms": t.MaxMS, "q1_ms": t.Q1MS,
		"q3_ms": t.Q3MS, "p20_ms": t.P20MS, "p80_ms": t.P80MS, "stdev_ms": t.StdevMS}
	for _, cs := range []struct {
		name string
		s    *ClockSummary
	}{{"events", t.Events}, {"kernel", kernelClock(t.Kernel)}} {
		if cs.s == nil {
			continue
		}
		medians[cs.name+".median_ms"] = cs.s.MedianMS
		spans[cs.name+".min_ms"], spans[cs.name+".q1_ms"], spans[cs.name+".q3_ms"] = cs.s.MinMS, cs.s.Q1MS, cs.s.Q3MS
	}
	if t.Kernel != nil {
		spans["kernel.busy_median_ms"], spans["kernel.launch_ms"] = t.Kernel.BusyMedianMS, t.Kernel.LaunchMS
	}
	for i, v := range t.KeptSamplesMS {
		medians["kept_samples_ms["+strconv.Itoa(i)+"]"] = v
	}
	// A median or a sample of 0 is an absent one; any other is a duration
	// a call can take.
	for _, k := range sortedKeys(medians) {
		if v := medians[k]; v != 0 && !(v >= MinTimingMS && v <= MaxTimingMS) {
			return fmt.Errorf("%s.%s is %g ms, outside the %g to %g ms a call can take", path, k, v, MinTimingMS, MaxTimingMS)
		}
	}
	for _, k := range sortedKeys(spans) {
		if v := spans[k]; !(v >= 0 && v <= MaxTimingMS) {
			return fmt.Errorf("%s.%s is %g ms, outside the 0 to %g ms a timing's figures can be", path, k, v, MaxTimingMS)
		}
	}
	return nil
}

func kernelClock(k *KernelSummary) *ClockSummary {
	if k == nil {
		return nil
	}
	return &k.ClockSummary
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The most a results file's texts of the experiment's keep once decoded:
// an implementation's error, the tail of its stderr, a correctness reason,
// the run's error. The runner writes less (runner/run, harness); a file
// from elsewhere (history import, an older runner) is cut to its first
// and last halves.
const (
	MaxErrorText = 16 << 10
	MaxTailText  = 8 << 10
)

// texts bounds the experiment's texts in r and drops their control
// sequences (text.Safe): every reader (tables, CSV, the history,
// regress's markdown) gets them bounded and harmless. Applying it again
// changes nothing.
func (r *Results) texts() {
	r.Error = boundedText(r.Error, MaxErrorText)
	for i := range r.Cases {
		r.Cases[i].texts()
	}
	if r.Env.Cache != nil {
		for i := range r.Env.Cache.Fresh {
			r.Env.Cache.Fresh[i].Error = boundedText(r.Env.Cache.Fresh[i].Error, MaxErrorText)
		}
	}
}

// texts bounds the experiment's texts of a case, as Results.texts.
func (c *Case) texts() {
	for _, ir := range c.Results {
		if ir == nil {
			continue
		}
		ir.Error, ir.StderrTail = boundedText(ir.Error, MaxErrorText), boundedText(ir.StderrTail, MaxTailText)
		if ir.Correctness != nil {
			ir.Correctness.Reason = boundedText(ir.Correctness.Reason, MaxErrorText)
		}
	}
}

// boundedText is s without control sequences, cut to at most limit bytes.
func boundedText(s string, limit int) string {
	s = text.Safe(s)
	if len(s) <= limit {
		return s
	}
	// The line HeadTail puts between the halves is less than 64 bytes:
	// the result is within limit, and a second pass leaves it.
	half := (limit - 64) / 2
	return text.HeadTailString(s, half, half)
}
