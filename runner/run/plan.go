package run

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/timing"
	"github.com/xrun-dev/xrun/spec"
)

// plan is what the run decides before any worker starts: the device and
// the method with its defaults. The implementations follow from it.
type plan struct {
	cpu      bool
	gpu      *result.GPU // the device the workers use; nil on the CPU
	method   spec.Method
	rule     analyze.StoppingRule
	warmupMS float64
	trials   int
	rounds   int
	timeout  time.Duration // per worker command
}

// impl is one implementation (or the reference) and its worker.
type impl struct {
	name    string
	spec    spec.Implementation
	isRef   bool
	skip    string // why it does not run here
	w       *harness.Worker
	initErr *harness.Error // a failure every case would repeat
	// startErr is a failure of a start made ahead of time (startAll), for
	// the next use to report instead of starting again.
	startErr error
	// fresh is where its compile caches are once it ran again with fresh
	// ones (freshCaches); "" while it uses the job's. freshIdx is its
	// entry in env.cache.fresh.
	fresh    string
	freshIdx int
}

// pickMode decides between GPU and CPU and reads the GPUs.
func (rn *runner) pickMode(ctx context.Context) error {
	r, s := rn.rec.r, rn.s
	if rn.o.Mode == "cpu" {
		rn.cpu = true
	} else {
		gpus, driver, err := gpuinfo.Query(ctx)
		if err == nil && len(gpus) > 0 {
			r.Env.GPUs, r.Env.Driver = gpus, driver
			rn.gpu = visibleGPU(r.Env.GPUs)
			if t := s.Resources.GPUType; !spec.IsGPUType(rn.gpu.Name, t) {
				return &InfraError{fmt.Errorf("the spec asks for GPU type %q (resources.gpu_type) but GPU %d here is %s: run it on a machine with one, or change gpu_type",
					t, rn.gpu.Index, rn.gpu.Name)}
			}
		} else {
			if err == nil {
				err = gpuinfo.ErrNoGPU
			}
			switch {
			case rn.o.Mode == "gpu":
				return &InfraError{fmt.Errorf("mode gpu was asked for, but %v", err)}
			case !s.Resources.GPUs.None():
				return &NoGPUError{GPUs: fmt.Sprint(s.Resources.GPUs), Err: err, Hint: rn.o.CPUHint}
			}
			rn.logf("no GPU (%v): running the CPU sweep", err)
			rn.cpu = true
		}
	}
	r.Mode = "gpu"
	if rn.cpu {
		r.Mode = "cpu"
	}
	r.SweepKeys = s.Benchmark.SweepKeys(rn.cpu)
	if r.SweepKeys == nil {
		r.SweepKeys = []string{}
	}
	return nil
}

// visibleGPU is the GPU a worker's cuda:0 is: the first one nvidia-smi
// lists, or the first named by CUDA_VISIBLE_DEVICES (index or UUID).
func visibleGPU(gpus []result.GPU) *result.GPU {
	first, _, _ := strings.Cut(os.Getenv("CUDA_VISIBLE_DEVICES"), ",")
	first = strings.TrimSpace(first)
	for i := range gpus {
		if first != "" && (strconv.Itoa(gpus[i].Index) == first || gpus[i].UUID == first) {
			return &gpus[i]
		}
	}
	return &gpus[0]
}

// setMethod fills in the method's defaults for the device and returns the
// methodology they make.
func (p *plan) setMethod(m spec.Method) result.Methodology {
	if p.cpu && m.MaxTimeS == 0 {
		// A CPU run checks correctness; its timings are rough on shared
		// cores and would otherwise spend the whole cap not converging.
		m.MaxTimeS = DefaultCPUMaxTimeS
	}
	p.method = m
	p.rule = analyze.StoppingRuleFrom(m)
	p.warmupMS = orFloat(m.WarmupMS, DefaultWarmupMS)
	p.trials = orInt(m.Trials, DefaultTrials)
	p.rounds = max(orInt(m.Rounds, DefaultRounds), 3)
	p.timeout = m.ImplTimeout.Duration
	if p.timeout <= 0 {
		p.timeout = DefaultImplTimeout
	}
	timer := "cuda_events"
	if p.cpu {
		timer = "perf_counter"
	}
	threshold := m.FastThreshold
	if threshold < 1 {
		threshold = analyze.DefaultThreshold
	}
	mt := result.Methodology{
		Timer: timer, FlushBytes: int64(m.FlushBytes), WarmupMS: p.warmupMS, LaterWarmupMS: p.warmupMS * timing.LaterWarmupShare,
		MinSamples: p.rule.MinSamples, MaxSamples: p.rule.MaxSamples, MinTimeS: p.rule.MinTimeS, MaxTimeS: p.rule.MaxTimeS,
		TargetRSE: p.rule.TargetRSE, StoppingRule: p.rule.String(), Rounds: p.rounds, Trials: p.trials,
		ImplTimeoutS: p.timeout.Seconds(), FastThreshold: threshold, CUDAGraph: m.CUDAGraph && !p.cpu,
	}
	if !p.cpu {
		mt.RestRatio = m.Rest()
		mt.ClockRule = timing.ClockRule
		if m.KernelClockOn() {
			mt.KernelClockMaxMS = m.KernelClockMax()
		} else {
			mt.KernelClockNote = "not asked for (method.kernel_clock: false)"
		}
	}
	return mt
}

// implementations lists what runs: the reference when it is timed, then
// the spec's implementations, each with why it is skipped here, if it is.
func (rn *runner) implementations() []*impl {
	b := &rn.s.Benchmark
	var impls []*impl
	// The reference needs a worker of its own only to be timed: every
	// implementation's worker computes it in-process for the checks.
	if b.Reference != "" && (b.TimeReference == nil || *b.TimeReference) {
		impls = append(impls, &impl{name: referenceName, isRef: true})
	}
	for _, im := range b.Implementations {
		x := &impl{name: im.Name, spec: im}
		x.skip = rn.skipReason(im)
		if x.skip != "" {
			rn.logf("%s: skipped: %s", im.Name, x.skip)
		}
		impls = append(impls, x)
	}
	return impls
}

// checkRefs finds every module:function the spec names before any worker
// starts: a misspelt name or a syntax error is a bad spec (exit 3) found
// in a second, not an error repeated by every case after the GPU work.
func (rn *runner) checkRefs(ctx context.Context, py string, env []string) error {
	problems, err := harness.CheckRefs(ctx, py, rn.o.ExperimentDir, env, harness.RefsOf(rn.s), rn.o.Worker)
	if err != nil {
		// The check is a shortcut: the workers still report what it missed.
		rn.logf("%v", err)
		return nil
	}
	if err := harness.RefsError(rn.s, problems); err != nil {
		return &SpecError{err}
	}
	return nil
}

var smRE = regexp.MustCompile(`^sm_([0-9]{2,3})(a?)$`)

// skipReason says why an implementation cannot run here, or "".
func (p *plan) skipReason(im spec.Implementation) string {
	if p.cpu {
		if im.NeedsGPU() {
			return fmt.Sprintf("needs a GPU (requires: %s); this run has none", strings.Join(im.Requires, ", "))
		}
		return ""
	}
	if im.CPUOnly() {
		return "a CPU-only check (requires: cpu); this run is on a GPU"
	}
	have, ok := ccNumber(p.gpu.ComputeCapability)
	if !ok {
		return ""
	}
	for _, req := range im.Requires {
		m := smRE.FindStringSubmatch(req)
		if m == nil {
			continue
		}
		need, _ := strconv.Atoi(m[1])
		if m[2] == "a" && have != need {
			return fmt.Sprintf("needs %s (architecture-specific features of compute capability %d.%d only); %s has %s", req, need/10, need%10, p.gpu.Name, p.gpu.ComputeCapability)
		}
		if have < need {
			return fmt.Sprintf("needs %s (compute capability %d.%d or later); %s has %s", req, need/10, need%10, p.gpu.Name, p.gpu.ComputeCapability)
		}
	}
	return ""
}

// ccNumber turns "9.0" into 90 and "10.0" into 100.
func ccNumber(cc string) (int, bool) {
	maj, min, ok := strings.Cut(cc, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return 0, false
	}
	return a*10 + b, true
}

// seeds returns the correctness seeds of a case: fixed ones, and a last one
// from crypto/rand that no implementation can know in advance.
func (p *plan) seeds() []int64 {
	out := make([]int64, 0, p.trials)
	for i := 1; i < p.trials; i++ {
		out = append(out, int64(i))
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux since 1.24
	}
	return append(out, int64(binary.LittleEndian.Uint32(b[:])&0x7fffffff))
}

func orFloat(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

func orInt(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
