// Package spec defines the experiment spec (xrun.yaml): its types, its strict
// parser and its validation. It is the one definition shared by the client
// (which packages and submits an experiment) and the runner (which runs it).
// Scaffold is the experiment `xrun init` writes.
package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FileName is the name of the spec file inside an experiment directory.
const FileName = "xrun.yaml"

// Spec is a parsed and validated xrun.yaml.
type Spec struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Image       Image       `yaml:"image"`
	Resources   Resources   `yaml:"resources"`
	Include     []string    `yaml:"include" want:"a list of paths like [../common]"`
	Env         []string    `yaml:"env" want:"a list of variable names like [WANDB_API_KEY]"`
	Benchmark   Benchmark   `yaml:"benchmark"`
	Criteria    []Criterion `yaml:"criteria"`

	// Path is the file the spec was read from (not part of the YAML).
	Path string `yaml:"-"`
	// Hash is the SHA-256 of the spec file's bytes (not part of the YAML).
	Hash string `yaml:"-"`
	// Lines maps each key's dotted path ("benchmark.implementations.fast")
	// to its line, for problems the runner finds after parsing.
	Lines map[string]int `yaml:"-"`
}

// At locates key for a message: "xrun.yaml:12: key" (the file's base name,
// and no line when the key is not in the file).
func (s *Spec) At(key string) string {
	loc := filepath.Base(s.Path)
	if n := s.Lines[key]; n > 0 {
		loc += ":" + strconv.Itoa(n)
	}
	return loc + ": " + key
}

// Image says what the experiment's container image is built from.
type Image struct {
	// Base is a base name from images/ (for example "cuda-torch" or "cpu")
	// or any image reference ("nvcr.io/nvidia/pytorch:25.01-py3").
	Base string `yaml:"base"`
	// Torch pins a PyTorch version; with Base empty it picks the base image
	// from the compatibility table.
	Torch string `yaml:"torch"`
	// CUDA pins a CUDA major.minor for the same lookup.
	CUDA string `yaml:"cuda"`
	// Python lists pip requirements installed on top of the base.
	Python []string `yaml:"python" want:"a list of pip requirements like [triton, einops]"`
	// Apt lists Debian/Ubuntu packages installed on top of the base.
	Apt []string `yaml:"apt" want:"a list of package names like [curl, git]"`
}

// Resources says what the job needs from the host.
type Resources struct {
	// GPUs is the job's GPUs by default (unset: one); 0 or none makes it a
	// CPU job, as submit --cpu does.
	GPUs GPUs `yaml:"gpus"`
	// GPUType, when set, is a substring the GPU name must contain ("H100").
	GPUType string `yaml:"gpu_type"`
	// Shm is the size of /dev/shm ("8g", "512m").
	Shm     ByteSize `yaml:"shm"`
	Memory  ByteSize `yaml:"memory"`
	Timeout Duration `yaml:"timeout"`
	// Pids caps the job's processes and threads (default 8192): the
	// experiment's code may use all but 256 of them, which the runner keeps.
	Pids int `yaml:"pids" want:"a whole number of processes, at least 512"`
	// CPUs, on a Docker host, reserves that many of the host's CPUs for
	// the job alone (client/gpus, CPUHost); unset, a GPU job gets its GPUs' share
	// of the host's CPUs and a CPU job the CPUs no job reserved.
	CPUs int `yaml:"cpus" want:"a whole number of CPUs, at least 1"`
}

// IsGPUType reports whether a GPU called name is of type typ
// (resources.gpu_type): name contains typ, ignoring case. Every GPU is of
// the empty type.
func IsGPUType(name, typ string) bool {
	return strings.Contains(strings.ToLower(name), strings.ToLower(typ))
}

// GPUs is a GPU request: a count, a list of device ids, or all of them.
type GPUs struct {
	Count int      // > 0 when a count was asked for
	IDs   []string // device indexes or UUIDs
	All   bool
	// Zero is set when no GPU was asked for in so many words ("0",
	// "none"), which an unset request is not.
	Zero bool
}

// None reports whether no GPU was asked for.
func (g GPUs) None() bool { return g.Count == 0 && len(g.IDs) == 0 && !g.All }

// String renders the request the way --gpus takes it.
func (g GPUs) String() string {
	switch {
	case g.All:
		return "all"
	case len(g.IDs) > 0:
		s := ""
		for i, id := range g.IDs {
			if i > 0 {
				s += ","
			}
			s += id
		}
		return s
	case g.Count > 0:
		return itoa(g.Count)
	}
	return "0"
}

// Benchmark says what to run and how to measure it.
type Benchmark struct {
	// Inputs is "module:callable": callable(params, seed) -> inputs
	// (a tuple/list of positional arguments, or a dict of keyword arguments).
	Inputs string `yaml:"inputs" want:"module:callable, e.g. gla.inputs:make_inputs"`
	// Reference is "module:callable": the trusted implementation.
	Reference string `yaml:"reference" want:"module:callable, e.g. gla.reference:chunk_gla"`
	// Implementations are the named candidates, in the order written. A
	// name mapped to a string ("blocked: matmul:blocked") is shorthand for
	// {fn: matmul:blocked}: nothing required, so it runs on every run,
	// --cpu included.
	Implementations Implementations `yaml:"implementations"`
	// Baseline names the implementation speedups are measured against;
	// default: the first implementation.
	Baseline string `yaml:"baseline" want:"an implementation name"`
	// Params are fixed parameters passed to every case.
	Params Params `yaml:"params"`
	// Sweep is the GPU sweep: the cases are the cartesian product of its
	// axes, in the order written, merged over Params; at most MaxCases.
	Sweep Sweep `yaml:"sweep"`
	// CPUSweep is the sweep used on a host without a GPU (also at most
	// MaxCases).
	CPUSweep Sweep `yaml:"cpu_sweep"`
	// CPUParams override Params on a host without a GPU.
	CPUParams Params `yaml:"cpu_params"`
	// Flops, Bytes and Tokens are "module:callable"(params) -> number
	// models: floating-point operations, bytes moved through device memory,
	// and tokens processed per call.
	Flops  string `yaml:"flops" want:"module:callable, e.g. gla.inputs:flops"`
	Bytes  string `yaml:"bytes" want:"module:callable, e.g. gla.inputs:bytes"`
	Tokens string `yaml:"tokens" want:"module:callable, e.g. gla.inputs:tokens"`
	// Metrics is "module:callable"(params, impl_params) -> dict of extra
	// figures recorded per implementation (e.g. CTAs launched vs SMs).
	Metrics string `yaml:"metrics" want:"module:callable, e.g. gla.inputs:metrics"`
	// TimeReference times the reference too (default true).
	TimeReference *bool `yaml:"time_reference"`
	// Tolerance overrides the per-dtype default tolerance: atol = rtol =
	// 1e-7 for float64, 1e-4 for float32, 1e-2 for float16 and bfloat16,
	// 1e-1 for float8, exact for integers, by the dtype of the output or
	// of the reference, whichever is less precise
	// (runner/harness/xrun_harness/correctness.py).
	Tolerance *Tolerance `yaml:"tolerance"`
	// Command runs a non-Python benchmark that speaks the harness protocol.
	Command []string `yaml:"command" want:"a list like [./bench, --fast]"`
	// Setup is a shell command run once in the experiment directory before
	// any implementation (for example to build a CUDA extension).
	Setup string `yaml:"setup" want:"one shell command as a string, e.g. \"make -C ext\""`
	// Method overrides the measurement defaults.
	Method Method `yaml:"method"`
}

// Implementation is one named candidate.
type Implementation struct {
	Name string `yaml:"-"`
	// Fn is "module:callable" with the reference's signature.
	Fn string `yaml:"fn" want:"module:callable, e.g. gla.triton:chunk_gla"`
	// Requires lists what the implementation needs: "gpu", "cuda", "triton",
	// or a minimum compute capability such as "sm_90" or "sm_100".
	Requires []string `yaml:"requires" want:"a list like [triton, sm_90]"`
	// Tolerance overrides the benchmark's tolerance for this implementation.
	Tolerance *Tolerance `yaml:"tolerance"`
	// Params are passed to this implementation alone as keyword arguments
	// (tile sizes, for instance): fn(*inputs, **params).
	Params Params `yaml:"params"`
	// Note is free text shown in reports.
	Note string `yaml:"note"`
}

// Implementations keeps the order in which implementations were written.
type Implementations []Implementation

// Names returns the implementation names in order.
func (is Implementations) Names() []string {
	out := make([]string, len(is))
	for i, im := range is {
		out[i] = im.Name
	}
	return out
}

// Get returns the implementation called name.
func (is Implementations) Get(name string) (Implementation, bool) {
	for _, im := range is {
		if im.Name == name {
			return im, true
		}
	}
	return Implementation{}, false
}

// Tolerance bounds the error of an implementation against the reference:
// an element passes when |out-ref| <= atol + rtol*|ref|.
type Tolerance struct {
	Atol float64 `yaml:"atol" json:"atol"`
	Rtol float64 `yaml:"rtol" json:"rtol"`
}

// Method overrides the measurement defaults (see package method in the
// runner for the defaults and their reasons). Zero values mean "default".
type Method struct {
	WarmupMS   float64 `yaml:"warmup_ms"`
	MinSamples int     `yaml:"min_samples"`
	MaxSamples int     `yaml:"max_samples"`
	// MinTimeS is the least wall time spent taking an implementation's
	// samples on a case (warm-ups excluded); MaxTimeS caps the samples'
	// own sum.
	MinTimeS      float64  `yaml:"min_time_s"`
	MaxTimeS      float64  `yaml:"max_time_s"`
	TargetRSE     float64  `yaml:"target_rse"`
	Rounds        int      `yaml:"rounds"`
	FlushBytes    ByteSize `yaml:"flush_bytes"`
	NoFlush       bool     `yaml:"no_flush"`
	Trials        int      `yaml:"trials"`
	ImplTimeout   Duration `yaml:"impl_timeout"`
	FastThreshold float64  `yaml:"fast_threshold"`
	CUDAGraph     bool     `yaml:"cuda_graph"`
	// RestRatio: before each GPU sample the GPU runs only a one-thread spin
	// kernel for at least RestRatio x the previous sample (default
	// DefaultRestRatio; 0 times back to back). A power-limited kernel is
	// then not timed at the clock its own previous call pushed down.
	RestRatio *float64 `yaml:"rest_ratio"`
	// KernelClock: read CUPTI's kernel records beside the CUDA events and
	// take the headline figures from them where every sample has one
	// (default true; false for the events alone, for example when the
	// experiment runs torch's profiler or CUPTI itself).
	KernelClock *bool `yaml:"kernel_clock"`
	// KernelClockMaxMS: a call whose GPU time is this or more (three
	// event-timed calls before its first samples) is timed on the events
	// alone: CUPTI's recording slows some long calls by up to 4%, and at
	// that length the events' own cost (about a microsecond) is under 1%
	// (default DefaultKernelClockMaxMS; 0: no limit).
	KernelClockMaxMS *float64 `yaml:"kernel_clock_max_ms"`
	// Retune: Triton's autotuners time their configs afresh instead of
	// reading the configs a run before this one stored in the compile
	// caches (xrun submit --retune does the same for one job).
	Retune bool `yaml:"retune"`
}

// KernelClockOn says whether the kernel clock is asked for.
func (m Method) KernelClockOn() bool { return m.KernelClock == nil || *m.KernelClock }

// DefaultKernelClockMaxMS is Method.KernelClockMaxMS when the spec leaves
// it out.
const DefaultKernelClockMaxMS = 0.1

// KernelClockMax returns the longest call the kernel clock times, in ms
// (0: no limit).
func (m Method) KernelClockMax() float64 {
	if m.KernelClockMaxMS == nil {
		return DefaultKernelClockMaxMS
	}
	return *m.KernelClockMaxMS
}

// DefaultRestRatio is Method.RestRatio when the spec leaves it out.
const DefaultRestRatio = 0.5

// Rest returns the rest ratio in effect.
func (m Method) Rest() float64 {
	if m.RestRatio == nil {
		return DefaultRestRatio
	}
	return *m.RestRatio
}

// Criterion is one success criterion. Exactly one of the kinds is set:
//
//	{speedup: pipelined, over: baseline, at_least: 1.2, for: all}
//	{max_error: all, below: 1e-2}
//	{correct: all}
//	{time: fused, below_ms: 2.5, for: all}
//
// Any of them may add expect: fail, the experiment's published outcome
// for a hypothesis its results refute (039's 1.2x speedup): the job's
// status stays criteria_failed, and xrun results --expected and the
// nightly (docs/regressions.md) take that failure as the expected outcome,
// reporting the criterion passing as a changed outcome instead.
type Criterion struct {
	Name string `yaml:"name"`

	Speedup string  `yaml:"speedup" want:"an implementation name"`
	Over    string  `yaml:"over" want:"an implementation name"`
	AtLeast float64 `yaml:"at_least"`
	// By says which ratio a speedup criterion reads: "median" (default:
	// over.median / speedup.median, the SPEEDUP column's figure) or
	// "conservative" (over.q1 / speedup.q3, the ratio of the two
	// interquartile ranges' near ends, as the FAST verdict reads them: it
	// passes only when the candidate's slow quarter beats the baseline's
	// fast quarter by at_least).
	By string `yaml:"by" want:"median or conservative"`

	MaxError string  `yaml:"max_error" want:"an implementation name or all"`
	Below    float64 `yaml:"below"`

	Correct string `yaml:"correct" want:"an implementation name or all"`

	Time    string  `yaml:"time" want:"an implementation name"`
	BelowMS float64 `yaml:"below_ms"`

	// For says over which cases the criterion must hold: "all" (default),
	// "any", or "median" (the median over cases).
	For string `yaml:"for" want:"all, any or median"`

	// Expect is the outcome the experiment declares for the criterion:
	// "pass" (default) or "fail" (ExpectValues).
	Expect string `yaml:"expect" want:"pass or fail"`

	// Line is where the criterion was written, for messages.
	Line int `yaml:"-"`
}

// criterionKeys are the keys each kind of criterion takes besides name and
// for. A key of another kind (below on a correct criterion) is read by
// nothing, so it is refused rather than silently ignored.
var criterionKeys = map[string][]string{
	"speedup":   {"speedup", "over", "at_least", "by"},
	"max_error": {"max_error", "below"},
	"correct":   {"correct"},
	"time":      {"time", "below_ms"},
}

// ExpectFail reports whether the criterion is declared to fail.
func (c Criterion) ExpectFail() bool { return c.Expect == "fail" }

// Kind names the kind of criterion.
func (c Criterion) Kind() string {
	switch {
	case c.Speedup != "":
		return "speedup"
	case c.MaxError != "":
		return "max_error"
	case c.Correct != "":
		return "correct"
	case c.Time != "":
		return "time"
	}
	return ""
}

// Duration is a time.Duration written as "30m", "90s" or "1h30m".
type Duration struct{ time.Duration }

// ByteSize is a size written as "8g", "512m", "1GiB" or a plain byte count.
type ByteSize int64

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
