package spec

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/result"
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	callableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_.]*$`)
	envRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	smRE       = regexp.MustCompile(`^sm_[0-9]{2,3}a?$`)
)

// Requirements an implementation may list, besides sm_NN. "cpu" marks a
// check that runs on CPU runs only (a slow step-by-step version, say).
var knownRequires = []string{"gpu", "cuda", "triton", "torch", "cpu"}

// MaxCases is the most cases a sweep (GPU or CPU) may expand to. The runner
// holds every case and its results in memory and writes them all to
// results.json after each implementation, so a sweep of many long axes (7
// axes of 30 values are 2.2e10 cases) would exhaust the host's memory
// before the first kernel ran; 10000 is far beyond any real experiment
// (those in experiments/ have fewer than ten) and still cheap to hold.
const MaxCases = 10000

// ForValues are the allowed values of a criterion's "for".
var ForValues = []string{"all", "any", "median"}

// ByValues are the allowed values of a speedup criterion's "by".
var ByValues = []string{"median", "conservative"}

// ExpectValues are the allowed values of a criterion's "expect".
var ExpectValues = []string{"pass", "fail"}

func validate(s *Spec, file string, lines map[string]int) Errors {
	var errs Errors
	bad := func(key, format string, args ...any) {
		for i, a := range args {
			if s, ok := a.(string); ok {
				args[i] = Clip(s, 100) // a value the file gave, which may be megabytes
			}
		}
		errs = append(errs, &Error{File: file, Line: lines[key], Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		bad("name", "missing; give the experiment a name (lower case letters, digits, '.', '_' or '-')")
	} else if !nameRE.MatchString(s.Name) {
		bad("name", "%q is not allowed: use lower case letters, digits, '.', '_' or '-', starting with a letter or digit", s.Name)
	}
	for i, inc := range s.Include {
		if filepath.IsAbs(inc) {
			bad(fmt.Sprintf("include[%d]", i), "%q is absolute; include paths are relative to the experiment directory", inc)
		}
	}
	for i, e := range s.Env {
		if !envRE.MatchString(e) {
			bad(fmt.Sprintf("env[%d]", i), "%q is not a variable name; list the names of host variables to pass (values are read at submit time)", e)
		}
	}
	errs = append(errs, validateBenchmark(&s.Benchmark, bad)...)
	checkSweeps(&s.Benchmark, bad)
	impls := map[string]bool{result.Reference: true}
	for _, im := range s.Benchmark.Implementations {
		impls[im.Name] = true
	}
	for i, c := range s.Criteria {
		key := fmt.Sprintf("criteria[%d]", i)
		kinds := 0
		for _, k := range []string{c.Speedup, c.MaxError, c.Correct, c.Time} {
			if k != "" {
				kinds++
			}
		}
		if kinds != 1 {
			bad(key, "give exactly one of speedup, max_error, correct or time")
			continue
		}
		checkCriterionKeys(key, c.Kind(), lines, bad)
		if c.For != "" && !contains(ForValues, c.For) {
			bad(key+".for", "%q is not allowed; use one of %s", c.For, strings.Join(ForValues, ", "))
		}
		if c.By != "" && !contains(ByValues, c.By) {
			bad(key+".by", "%q is not allowed; use median (the default: the ratio of the medians) or conservative (baseline q1 over candidate q3)", c.By)
		}
		if c.Expect != "" && !contains(ExpectValues, c.Expect) {
			bad(key+".expect", "%q is not allowed; use pass (the default) or fail (the experiment's published outcome is that this criterion fails)", c.Expect)
		}
		checkImpl := func(k, name string, allowAll bool) {
			if allowAll && name == "all" {
				return
			}
			if !impls[name] {
				bad(key+"."+k, "%q is not an implementation; known: %s", name, strings.Join(s.Benchmark.Implementations.Names(), ", "))
			}
		}
		switch c.Kind() {
		case "speedup":
			checkImpl("speedup", c.Speedup, false)
			if c.Over == "" {
				bad(key+".over", "missing; say which implementation the speedup is over")
			} else {
				checkImpl("over", c.Over, false)
			}
			if c.AtLeast <= 0 {
				bad(key+".at_least", "must be > 0 (e.g. 1.2)")
			}
		case "max_error":
			checkImpl("max_error", c.MaxError, true)
			if c.Below <= 0 {
				bad(key+".below", "must be > 0 (e.g. 1e-2)")
			}
		case "correct":
			checkImpl("correct", c.Correct, true)
		case "time":
			checkImpl("time", c.Time, false)
			if c.BelowMS <= 0 {
				bad(key+".below_ms", "must be > 0")
			}
		}
	}
	if s.Resources.CPUs < 0 {
		bad("resources.cpus", "found %d; write how many of the host's CPUs the job reserves, at least 1, or leave it out", s.Resources.CPUs)
	}
	if p := s.Resources.Pids; p != 0 && p < MinPids {
		bad("resources.pids", "%d is too few: give at least %d (the runner keeps 256 of them, and a worker's Python has dozens of threads), or leave it out for 8192", p, MinPids)
	}
	if d := s.Resources.Timeout.Duration; d < 0 || d > 0 && d < MinTimeout {
		bad("resources.timeout", "%s is too short: give at least %s (a job starts its workers and checks before it times anything), or leave it out for no limit", d, MinTimeout)
	}
	if d := s.Benchmark.Method.ImplTimeout.Duration; d < 0 || d > 0 && d < MinTimeout {
		bad("benchmark.method.impl_timeout", "%s is too short: give at least %s, or leave it out for the default", d, MinTimeout)
	}
	return errs
}

// checkCriterionKeys refuses keys written in criterion key that belong to
// another kind than kind, listing the ones it takes.
func checkCriterionKeys(key, kind string, lines map[string]int, bad func(key, format string, args ...any)) {
	var allowed []string
	for _, k := range yamlKeys(reflect.TypeOf(Criterion{})) {
		if k == "name" || k == "for" || k == "expect" || contains(criterionKeys[kind], k) {
			allowed = append(allowed, k)
		}
	}
	for _, k := range yamlKeys(reflect.TypeOf(Criterion{})) {
		if _, written := lines[key+"."+k]; !written || contains(allowed, k) {
			continue
		}
		owner := ""
		for other, keys := range criterionKeys {
			if contains(keys, k) {
				owner = other
			}
		}
		bad(key+"."+k, "not a key of a %s criterion (%s belongs to %s); allowed: %s", kind, k, owner, strings.Join(allowed, ", "))
	}
}

func validateBenchmark(b *Benchmark, bad func(key, format string, args ...any)) Errors {
	if len(b.Command) > 0 {
		if len(b.Implementations) == 0 {
			bad("benchmark.implementations", "missing; a command benchmark still names its implementations")
		}
		return nil
	}
	callable := func(key, v string, required bool) {
		if v == "" {
			if required {
				bad(key, "missing; write module:callable (e.g. gla.reference:chunk_gla)")
			}
			return
		}
		if !callableRE.MatchString(v) {
			bad(key, "%q is not module:callable (e.g. gla.reference:chunk_gla)", v)
		}
	}
	callable("benchmark.inputs", b.Inputs, true)
	callable("benchmark.reference", b.Reference, true)
	callable("benchmark.flops", b.Flops, false)
	callable("benchmark.bytes", b.Bytes, false)
	callable("benchmark.tokens", b.Tokens, false)
	callable("benchmark.metrics", b.Metrics, false)
	if len(b.Implementations) == 0 {
		bad("benchmark.implementations", "missing; name at least one implementation (name: module:callable)")
	}
	for _, im := range b.Implementations {
		key := "benchmark.implementations." + im.Name
		if im.Name == result.Reference || im.Name == "all" {
			bad(key, "%q is reserved; choose another name", im.Name)
		}
		callable(key, im.Fn, true)
		for _, r := range im.Requires {
			if !contains(knownRequires, r) && !smRE.MatchString(r) {
				bad(key+".requires", "%q is not known; use %s or sm_NN (e.g. sm_90, sm_100)", r, strings.Join(knownRequires, ", "))
			}
		}
		checkTolerance(key+".tolerance", im.Tolerance, bad)
	}
	if b.Baseline != "" && b.Baseline != result.Reference {
		if _, ok := b.Implementations.Get(b.Baseline); !ok {
			bad("benchmark.baseline", "%q is not an implementation; known: reference, %s", b.Baseline, strings.Join(b.Implementations.Names(), ", "))
		}
	}
	checkTolerance("benchmark.tolerance", b.Tolerance, bad)
	m := b.Method
	for key, v := range map[string]float64{
		"warmup_ms": m.WarmupMS, "min_time_s": m.MinTimeS, "max_time_s": m.MaxTimeS,
		"target_rse": m.TargetRSE, "fast_threshold": m.FastThreshold,
		"min_samples": float64(m.MinSamples), "max_samples": float64(m.MaxSamples),
		"rounds": float64(m.Rounds), "trials": float64(m.Trials),
	} {
		if !finite(v) || v < 0 {
			bad("benchmark.method."+key, "found %v; write a finite number >= 0", v)
		}
	}
	if th := m.FastThreshold; finite(th) && th > 0 && th <= 1 {
		bad("benchmark.method.fast_threshold", "found %v; the margin is a ratio above 1: write 1.05 for 5 %% (leave it out for the default 1.02)", th)
	}
	if m.KernelClockMax() < 0 {
		bad("benchmark.method.kernel_clock_max_ms", "must be >= 0 (0: no limit)")
	}
	if r := m.Rest(); r < 0 || r > 10 {
		bad("benchmark.method.rest_ratio", "must be between 0 and 10")
	}
	if m.MaxTimeS > 0 && m.MinTimeS > m.MaxTimeS {
		bad("benchmark.method.min_time_s", "is larger than max_time_s")
	}
	if m.MaxSamples > 0 && m.MinSamples > m.MaxSamples {
		bad("benchmark.method.min_samples", "is larger than max_samples")
	}
	return nil
}

// checkSweeps refuses sweeps of more than MaxCases cases, counting them
// without expanding them (command benchmarks are swept too).
func checkSweeps(b *Benchmark, bad func(key, format string, args ...any)) {
	for _, sw := range []struct {
		key   string
		sweep Sweep
	}{{"benchmark.sweep", b.Sweep}, {"benchmark.cpu_sweep", b.CPUSweep}} {
		if n := sw.sweep.Count(); n > MaxCases {
			count := strconv.Itoa(n)
			if n == math.MaxInt {
				count = "more than " + count
			}
			bad(sw.key, "expands to %s cases (%s); a run may have at most %d: sweep fewer values, or split the sweep into several experiments", count, sw.sweep.shape(), MaxCases)
		}
	}
}

func checkTolerance(key string, t *Tolerance, bad func(key, format string, args ...any)) {
	if t == nil {
		return
	}
	for k, v := range map[string]float64{"atol": t.Atol, "rtol": t.Rtol} {
		if !finite(v) || v < 0 {
			bad(key+"."+k, "found %v; write a finite number >= 0, such as 1e-3", v)
		}
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// MinPids is the fewest processes and threads a spec may give a job.
const MinPids = 512

// MinTimeout is the shortest timeout a spec may give a job or an
// implementation: less cannot start a worker.
const MinTimeout = time.Second

// BaselineName is the implementation speedups are measured against.
func (b *Benchmark) BaselineName() string {
	if b.Baseline != "" {
		return b.Baseline
	}
	if len(b.Implementations) > 0 {
		return b.Implementations[0].Name
	}
	return result.Reference
}

// Cases returns the sweep points: the GPU sweep, or on a host without a GPU
// the CPU sweep (falling back to the GPU sweep when none is given).
func (b *Benchmark) Cases(cpu bool) []Params {
	if cpu {
		params := b.Params.Merge(b.CPUParams)
		if len(b.CPUSweep) > 0 {
			return b.CPUSweep.Cases(params)
		}
		return b.Sweep.Cases(params)
	}
	return b.Sweep.Cases(b.Params)
}

// SweepKeys returns the names of the axes that vary (for report columns).
func (b *Benchmark) SweepKeys(cpu bool) []string {
	if cpu && len(b.CPUSweep) > 0 {
		return b.CPUSweep.Keys()
	}
	return b.Sweep.Keys()
}

// CPUOnly reports whether an implementation runs on CPU runs only.
func (im Implementation) CPUOnly() bool { return contains(im.Requires, "cpu") }

// NeedsGPU reports whether an implementation needs a GPU to run.
func (im Implementation) NeedsGPU() bool {
	for _, r := range im.Requires {
		if r == "gpu" || r == "cuda" || r == "triton" || smRE.MatchString(r) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
