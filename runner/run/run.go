// Package run is the runner's orchestrator: it loads the experiment, records
// the environment, starts a worker per implementation, checks each against
// the reference on every case, times them in interleaved rounds until the
// stopping rule is met, evaluates the criteria, and writes results.json
// (after every step, so partial results survive a crash), results.md and
// the optional POST.
package run

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/runner/analyze"
	"github.com/xrun-dev/xrun/runner/contract"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/post"
	"github.com/xrun-dev/xrun/runner/profile"
	"github.com/xrun-dev/xrun/runner/report"
	"github.com/xrun-dev/xrun/runner/result"
	"github.com/xrun-dev/xrun/runner/sandbox"
	"github.com/xrun-dev/xrun/runner/spec"
	"github.com/xrun-dev/xrun/runner/stats"
	"github.com/xrun-dev/xrun/runner/timing"
	"github.com/xrun-dev/xrun/runner/version"
)

// Options says what to run and where to put the results.
type Options struct {
	// ExperimentDir holds xrun.yaml; OutDir receives results.json,
	// results.md, runner.log and logs/<implementation>.log.
	ExperimentDir, OutDir string
	// Mode is "gpu", "cpu" or "" (gpu when nvidia-smi finds a GPU).
	Mode string
	// Python is the interpreter for the harness; "" finds one with numpy.
	Python string

	JobID, ClientVersion, ImageRef, ImageDigest, GitCommit string
	// GitDirty says the experiment's files differ from GitCommit.
	GitDirty bool
	// CodeHash identifies the experiment's code when it was copied into
	// the container beside the image.
	CodeHash string
	// PostURL, when set, receives results.json with PostToken as bearer.
	PostURL, PostToken string

	// NoClockMonitor leaves out the clock readings taken while timing.
	NoClockMonitor bool
	// OutToLog writes OutDir into the log (stdout) at the end, for a
	// backend that keeps the log but not the files (runner/outlog).
	OutToLog bool
	// Profile asks for Nsight Compute reports after the timed cases
	// (XRUN_PROFILE; the syntax of profile.Parse). "" asks for none.
	Profile string
	// HostName is the machine's name as the client knows it
	// (XRUN_HOST_NAME); "" records the runner's own host name.
	HostName string
	// Worker is the user every process of the experiment runs as, apart
	// from the runner (runner/sandbox); nil runs them as the runner's own
	// user. With one, OutDir must be the runner's alone.
	Worker *sandbox.User

	// Log receives progress (runner.log gets the same). The final table
	// goes to runner.log only: the caller prints it where it belongs
	// (Main on stderr, xrun on stdout), so it is never printed twice.
	Log io.Writer
}

// Method defaults that the stats rule does not hold (spec.Method overrides
// each).
const (
	DefaultWarmupMS    = 100.0
	DefaultTrials      = 3
	DefaultRounds      = 3
	DefaultImplTimeout = 10 * time.Minute
	// DefaultCPUMaxTimeS caps the timing of one implementation on one case
	// on a CPU run (the GPU cap is stats.DefaultRule's).
	DefaultCPUMaxTimeS = 2.0
	// ReasonMaxWallTime is the stop reason when an implementation used
	// 3 x max_time_s of wall time (flushes, syncs and warm-ups included)
	// without meeting the rule.
	ReasonMaxWallTime = timing.ReasonMaxWallTime
	// minInitTimeout is the least time a worker gets to import the code.
	minInitTimeout = time.Minute
)

const referenceName = "reference"

// Run runs the experiment in o.ExperimentDir and returns its results. The
// error is a *SpecError, an *InfraError, or ctx's error on cancellation;
// failures of implementations are in the results, not in the error.
func Run(ctx context.Context, o Options) (*result.Results, error) {
	if o.ExperimentDir == "" {
		o.ExperimentDir = contract.ExperimentDir
	}
	if o.OutDir == "" {
		o.OutDir = contract.OutDir
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	switch o.Mode {
	case "", "gpu", "cpu":
	default:
		return nil, &SpecError{fmt.Errorf("mode %q: use gpu or cpu", o.Mode)}
	}
	expDir, err := filepath.Abs(o.ExperimentDir)
	if err != nil {
		return nil, &SpecError{fmt.Errorf("experiment directory %q: %w", o.ExperimentDir, err)}
	}
	o.ExperimentDir = expDir
	if err := os.MkdirAll(filepath.Join(o.OutDir, "logs"), 0o755); err != nil {
		return nil, &InfraError{fmt.Errorf("create output directory: %w", err)}
	}
	if o.Worker != nil {
		for _, d := range []string{o.OutDir, filepath.Join(o.OutDir, "logs")} {
			if err := sandbox.CheckPrivate(d); err != nil {
				return nil, &InfraError{fmt.Errorf("the output directory must be the runner's alone: %w", err)}
			}
		}
	}
	logFile, err := os.OpenFile(filepath.Join(o.OutDir, "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, &InfraError{fmt.Errorf("open runner.log in %s (is the output directory writable?): %w", o.OutDir, err)}
	}
	defer logFile.Close()
	mu := new(sync.Mutex)
	rn := &runner{o: o, log: &syncWriter{mu: mu, w: io.MultiWriter(o.Log, logFile)}, logFile: &syncWriter{mu: mu, w: logFile},
		path: filepath.Join(o.OutDir, result.FileName), windows: map[windowKey][]gpuinfo.Window{}}
	return rn.run(ctx)
}

type runner struct {
	o Options
	s *spec.Spec
	r *result.Results
	// varying are the parameters that differ between cases: they label them.
	varying []string
	log     io.Writer
	logFile io.Writer // runner.log alone
	path    string

	cpu        bool
	gpu        *result.GPU // the device the workers use; nil on the CPU
	rule       stats.Rule
	method     spec.Method
	warmupMS   float64
	trials     int
	rounds     int
	timeout    time.Duration
	argv       []string
	tmp        string // holds the harness while the run lasts
	env        []string
	impls      []*impl // reference first, then the spec's order
	gotReady   bool
	writeErred bool
	// loop is the timing loop, across the cases.
	loop *timing.Loop
	// mon reads the GPU's clocks while samples are timed (GPU runs where
	// nvidia-smi can stream); windows are when each implementation was timed
	// in each case, keyed by case index and name.
	mon     *gpuinfo.Monitor
	windows map[windowKey][]gpuinfo.Window
	mu      sync.Mutex // guards what concurrent worker starts and checks share
	// prof is the Nsight Compute request (nil: none) and profImpls the
	// implementations it chose, in spec order.
	prof      *profile.Request
	profImpls []string
	// ncu is the Nsight Compute to run, or ncuErr why there is none.
	ncu    string
	ncuErr error
	// strays says how many processes of the experiment outlived their
	// workers, once killStrays killed them.
	strays string
}

type windowKey struct {
	caseIdx int
	name    string
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
}

func (rn *runner) logf(format string, args ...any) {
	fmt.Fprintf(rn.log, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (rn *runner) run(parent context.Context) (*result.Results, error) {
	o := rn.o
	rn.r = &result.Results{
		SchemaVersion: result.SchemaVersion, JobID: o.JobID, CreatedAt: time.Now().UTC(), Status: result.StatusRunning,
		ClientVersion: o.ClientVersion, RunnerVersion: version.Get(), Image: result.Image{Ref: o.ImageRef, Digest: o.ImageDigest, CodeHash: o.CodeHash},
		Cases: []result.Case{}, Comparisons: []result.Comparison{}, Criteria: []result.Criterion{}, Warnings: []result.Warning{},
		SweepKeys: []string{}, Implementations: []string{}, Mode: "cpu",
	}
	if o.Mode == "gpu" {
		rn.r.Mode = "gpu" // until pickMode knows
	}
	r := rn.r
	rn.logf("xrun-runner %s: experiment %s, output %s", r.RunnerVersion, o.ExperimentDir, o.OutDir)
	s, err := spec.Load(o.ExperimentDir)
	if err != nil {
		return rn.abort(&SpecError{err})
	}
	rn.s = s
	r.Experiment, r.SpecHash = s.Name, s.Hash
	r.Implementations = s.Benchmark.Implementations.Names()
	r.Baseline = s.Benchmark.BaselineName()
	if err := result.WriteFile(rn.path, r); err != nil {
		return nil, &InfraError{fmt.Errorf("write %s (is the output directory writable?): %w", rn.path, err)}
	}

	ctx := parent
	if t := s.Resources.Timeout.Duration; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, t)
		defer cancel()
	}
	r.Env = hostEnv(ctx, o, s.Include)
	if err := rn.pickMode(ctx); err != nil {
		return rn.abortStopped(parent, ctx, err)
	}
	rn.setMethod()
	rn.loop = rn.newLoop()
	if err := rn.setProfile(); err != nil {
		return rn.abort(&SpecError{err})
	}
	if rn.gpu != nil && !o.NoClockMonitor {
		if mon, err := gpuinfo.StartMonitor(ctx); err == nil {
			rn.mon = mon
			defer func() {
				if rn.mon != nil { // the run stopped before finish
					_ = rn.mon.Stop()
				}
			}()
		} else {
			rn.logf("clocks will be read only before and after the run: %v", err)
		}
	}
	err = rn.prepare(ctx)
	if rn.tmp != "" {
		defer os.RemoveAll(rn.tmp)
	}
	if err != nil {
		return rn.abortStopped(parent, ctx, err)
	}
	defer rn.closeWorkers()

	var runErr error
	if s.Benchmark.Setup != "" {
		runErr = rn.setup(ctx)
	}
	if runErr == nil {
		cases := s.Benchmark.Cases(rn.cpu)
		rn.varying = spec.VaryingKeys(cases)
		for _, p := range cases {
			if runErr = rn.runCase(ctx, p); runErr != nil {
				break
			}
		}
	}
	rn.closeWorkers()
	if runErr == nil && rn.prof != nil && ctx.Err() == nil {
		rn.profileAll(ctx)
	}
	return rn.finish(parent, ctx, runErr)
}

// abort records an error that stopped the run before any case and returns
// it with the results, which are written when the output is writable.
func (rn *runner) abort(err error) (*result.Results, error) {
	rn.logf("error: %v", err)
	now := time.Now().UTC()
	rn.r.Status, rn.r.Error, rn.r.FinishedAt = result.StatusFailed, err.Error(), &now
	if werr := result.WriteFile(rn.path, rn.r); werr != nil {
		rn.logf("error: %v", werr)
	}
	return rn.r, err
}

// abortStopped is abort for the steps that run under the job's clock: when
// ctx ended (SIGTERM, resources.timeout) err is most likely what the stop
// did to the step (a killed interpreter probe, a killed nvidia-smi), not a
// fault of the machine, and the run is recorded as cancelled or timed out
// like one stopped between cases.
func (rn *runner) abortStopped(parent, ctx context.Context, err error) (*result.Results, error) {
	if ctx.Err() == nil {
		return rn.abort(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		rn.logf("%v", err)
	} else {
		rn.logf("stopped before the first case, in a step that then failed: %v", err)
	}
	return rn.finish(parent, ctx, nil)
}

// pickMode decides between GPU and CPU and reads the GPUs.
func (rn *runner) pickMode(ctx context.Context) error {
	r, s := rn.r, rn.s
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
				return &InfraError{fmt.Errorf("the spec asks for GPUs (resources.gpus: %s) but this machine has none: %v; set XRUN_MODE=cpu (or --mode cpu) to run the CPU sweep instead", s.Resources.GPUs, err)}
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

func (rn *runner) setMethod() {
	m := rn.s.Benchmark.Method
	if rn.cpu && m.MaxTimeS == 0 {
		// A CPU run checks correctness; its timings are rough on shared
		// cores and would otherwise spend the whole cap not converging.
		m.MaxTimeS = DefaultCPUMaxTimeS
	}
	rn.method = m
	rn.rule = stats.RuleFrom(m)
	rn.warmupMS = orFloat(m.WarmupMS, DefaultWarmupMS)
	rn.trials = orInt(m.Trials, DefaultTrials)
	rn.rounds = max(orInt(m.Rounds, DefaultRounds), 3)
	rn.timeout = m.ImplTimeout.Duration
	if rn.timeout <= 0 {
		rn.timeout = DefaultImplTimeout
	}
	timer := "cuda_events"
	if rn.cpu {
		timer = "perf_counter"
	}
	threshold := m.FastThreshold
	if threshold < 1 {
		threshold = analyze.DefaultThreshold
	}
	rn.r.Methodology = result.Methodology{
		Timer: timer, FlushBytes: int64(m.FlushBytes), WarmupMS: rn.warmupMS,
		MinSamples: rn.rule.MinSamples, MaxSamples: rn.rule.MaxSamples, MinTimeS: rn.rule.MinTimeS, MaxTimeS: rn.rule.MaxTimeS,
		TargetRSE: rn.rule.TargetRSE, StoppingRule: rn.rule.String(), Rounds: rn.rounds, Trials: rn.trials,
		ImplTimeoutS: rn.timeout.Seconds(), FastThreshold: threshold, CUDAGraph: m.CUDAGraph && !rn.cpu,
	}
	if !rn.cpu {
		rn.r.Methodology.RestRatio = m.Rest()
		rn.r.Methodology.ClockRule = timing.ClockRule
		if m.KernelClockOn() {
			rn.r.Methodology.KernelClockMaxMS = m.KernelClockMax()
		} else {
			rn.r.Methodology.KernelClockNote = "not asked for (method.kernel_clock: false)"
		}
	}
}

// prepare finds the interpreter, writes the harness and decides which
// implementations run here.
func (rn *runner) prepare(ctx context.Context) error {
	s, o := rn.s, rn.o
	b := &s.Benchmark
	device := "cuda"
	if rn.cpu {
		device = "cpu"
	}
	rn.env = workerEnv(o.ExperimentDir, s.Include, device)
	if o.Worker != nil {
		n, err := o.Worker.LimitProcs("/sys/fs/cgroup")
		if err != nil {
			return &InfraError{err}
		}
		if c := rn.r.Env.Container; c != nil {
			c.WorkerUser, c.WorkerProcsLimit = o.Worker.String(), n
		}
		rn.logf("the experiment's code runs as uid %d, apart from the runner (at most %d processes)", o.Worker.UID, n)
	}
	if len(b.Command) > 0 {
		rn.argv = append([]string(nil), b.Command...)
		if strings.ContainsRune(rn.argv[0], '/') && !filepath.IsAbs(rn.argv[0]) {
			rn.argv[0] = filepath.Join(o.ExperimentDir, rn.argv[0])
		}
		rn.r.Env.Extra = map[string]string{"benchmark": "command"}
	} else {
		py, err := harness.FindPython(ctx, o.Python, o.Worker)
		if err != nil {
			return &InfraError{err}
		}
		dir, err := rn.harnessDir()
		if err != nil {
			return &InfraError{fmt.Errorf("write the harness: %w", err)}
		}
		rn.tmp = dir
		script, err := harness.WriteScript(dir)
		if err != nil {
			return &InfraError{err}
		}
		rn.argv = []string{py, "-u", script}
		rn.r.Env.Extra = map[string]string{"python_executable": py}
		rn.logf("python: %s", py)
		if err := rn.checkRefs(ctx, py); err != nil {
			return err
		}
	}
	// The reference needs a worker of its own only to be timed: every
	// implementation's worker computes it in-process for the checks.
	if b.Reference != "" && (b.TimeReference == nil || *b.TimeReference) {
		rn.impls = append(rn.impls, &impl{name: referenceName, isRef: true})
	}
	for _, im := range b.Implementations {
		x := &impl{name: im.Name, spec: im}
		x.skip = rn.skipReason(im)
		if x.skip != "" {
			rn.logf("%s: skipped: %s", im.Name, x.skip)
		}
		rn.impls = append(rn.impls, x)
	}
	return nil
}

// harnessDir makes the directory the harness is written to: a temporary
// one, under contract.RunnerDir when the experiment runs as another user,
// who may read it but not change it.
func (rn *runner) harnessDir() (string, error) {
	root := ""
	if rn.o.Worker != nil {
		root = contract.RunnerDir
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp(root, "xrun-harness-")
	if err != nil {
		return "", err
	}
	return dir, os.Chmod(dir, 0o755)
}

// checkRefs finds every module:function the spec names before any worker
// starts: a misspelt name or a syntax error is a bad spec (exit 3) found
// in a second, not an error repeated by every case after the GPU work.
func (rn *runner) checkRefs(ctx context.Context, py string) error {
	b := &rn.s.Benchmark
	var refs []harness.Ref
	add := func(key, ref string) {
		if ref != "" {
			refs = append(refs, harness.Ref{Key: key, Ref: ref})
		}
	}
	add("benchmark.inputs", b.Inputs)
	add("benchmark.reference", b.Reference)
	for _, im := range b.Implementations {
		key := "benchmark.implementations." + im.Name
		if _, ok := rn.s.Lines[key+".fn"]; ok {
			key += ".fn"
		}
		add(key, im.Fn)
	}
	add("benchmark.flops", b.Flops)
	add("benchmark.bytes", b.Bytes)
	add("benchmark.tokens", b.Tokens)
	add("benchmark.metrics", b.Metrics)
	problems, err := harness.CheckRefs(ctx, py, rn.o.ExperimentDir, rn.env, refs, rn.o.Worker)
	if err != nil {
		// The check is a shortcut: the workers still report what it missed.
		rn.logf("%v", err)
		return nil
	}
	if len(problems) == 0 {
		return nil
	}
	msgs := make([]string, len(problems))
	for i, p := range problems {
		msgs[i] = fmt.Sprintf("%s: %s: %s%s", rn.s.At(p.Key), p.Ref, p.Where(), p.Message)
	}
	return &SpecError{errors.New(strings.Join(msgs, "\n"))}
}

var smRE = regexp.MustCompile(`^sm_([0-9]{2,3})(a?)$`)

// skipReason says why an implementation cannot run here, or "".
func (rn *runner) skipReason(im spec.Implementation) string {
	if rn.cpu {
		if im.NeedsGPU() {
			return fmt.Sprintf("needs a GPU (requires: %s); this run has none", strings.Join(im.Requires, ", "))
		}
		return ""
	}
	if im.CPUOnly() {
		return "a CPU-only check (requires: cpu); this run is on a GPU"
	}
	have, ok := ccNumber(rn.gpu.ComputeCapability)
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
			return fmt.Sprintf("needs %s (architecture-specific features of compute capability %d.%d only); %s has %s", req, need/10, need%10, rn.gpu.Name, rn.gpu.ComputeCapability)
		}
		if have < need {
			return fmt.Sprintf("needs %s (compute capability %d.%d or later); %s has %s", req, need/10, need%10, rn.gpu.Name, rn.gpu.ComputeCapability)
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

// setup runs the spec's setup command once, in the experiment directory.
func (rn *runner) setup(ctx context.Context) error {
	rn.logf("setup: %s", rn.s.Benchmark.Setup)
	cmd := exec.CommandContext(ctx, "sh", "-c", rn.s.Benchmark.Setup)
	cmd.Dir, cmd.Env = rn.o.ExperimentDir, rn.env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	rn.o.Worker.Apply(cmd.SysProcAttr)
	cmd.Stdout, cmd.Stderr = rn.log, rn.log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rn.r.Error = fmt.Sprintf("setup %q failed: %v (its output is in runner.log)", rn.s.Benchmark.Setup, err)
		rn.logf("error: %s", rn.r.Error)
		return errSetup
	}
	return nil
}

var errSetup = errors.New("setup failed")

// worker returns im's worker, starting it (and sending init) when it has
// none or its last one died.
func (rn *runner) worker(ctx context.Context, im *impl) (*harness.Worker, error) {
	if im.initErr != nil {
		return nil, im.initErr
	}
	if err := im.startErr; err != nil {
		im.startErr = nil
		return nil, err
	}
	if im.w != nil && !im.w.Exited() {
		return im.w, nil
	}
	if im.w != nil {
		im.w.Close(0)
		im.w = nil
	}
	b := &rn.s.Benchmark
	w, err := harness.Start(harness.Config{
		Name: im.name, Argv: rn.argv, Dir: rn.o.ExperimentDir, Env: rn.env,
		LogPath: filepath.Join(rn.o.OutDir, "logs", safeName(im.name)+".log"),
		Logf:    rn.logf, As: rn.o.Worker, MemoryLimitBytes: rn.memoryLimit(),
	})
	if err != nil {
		im.initErr = &harness.Error{Kind: harness.KindCrash, Where: "harness", Message: err.Error()}
		return nil, im.initErr
	}
	init := harness.Init{
		Impl: im.name, Fn: im.spec.Fn, Reference: b.Reference, Inputs: b.Inputs, Metrics: b.Metrics,
		Device: "cuda", Flush: !rn.method.NoFlush, FlushBytes: int64(rn.method.FlushBytes),
		CUDAGraph: rn.method.CUDAGraph, KernelClock: rn.method.KernelClockOn(),
	}
	if im.isRef {
		init.Fn = b.Reference
	} else if len(im.spec.Params) > 0 {
		init.ImplParams = harness.EncodeParams(im.spec.Params)
	}
	if rn.cpu {
		init.Device, init.Flush, init.CUDAGraph, init.KernelClock = "cpu", false, false, false
	}
	models := map[string]string{}
	for k, v := range map[string]string{"flops": b.Flops, "bytes": b.Bytes, "tokens": b.Tokens} {
		if v != "" {
			models[k] = v
		}
	}
	if len(models) > 0 {
		init.Models = models
	}
	// Imports get at least minInitTimeout: on a loaded machine importing
	// torch in several workers at once is slow, not hung.
	opCtx, cancel := context.WithTimeout(ctx, max(rn.timeout, minInitTimeout))
	defer cancel()
	rn.logf("%s: starting worker", im.name)
	ready, err := w.Init(opCtx, init)
	if err != nil {
		w.Close(time.Second)
		var he *harness.Error
		if errors.As(err, &he) && (he.Kind == harness.KindImport || he.Kind == harness.KindException) {
			im.initErr = he // importing is the same in every case
		}
		return nil, err
	}
	im.w = w
	rn.noteReady(ready)
	return w, nil
}

// startAll starts the workers a case needs at the same time: importing
// torch takes seconds, and workers start again after a crash.
func (rn *runner) startAll(ctx context.Context, kc *kcase) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(2, runtime.NumCPU()))
	for _, im := range rn.impls {
		if !rn.live(kc, im) || im.initErr != nil || (im.w != nil && !im.w.Exited()) {
			continue
		}
		wg.Add(1)
		go func(im *impl) {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if _, err := rn.worker(ctx, im); err != nil {
				im.startErr = err
			}
		}(im)
	}
	wg.Wait()
}

// noteReady records the environment the first worker reports.
func (rn *runner) noteReady(rd *harness.Ready) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	// Every implementation's kernel clock adds the same launch cost: the
	// first worker's.
	m := &rn.r.Methodology
	switch {
	case rd.KernelClock != "" && m.KernelClock == "":
		m.KernelClock, m.LaunchMS = rd.KernelClock, rd.LaunchMS
	case rd.KernelClock == "" && rd.KernelClockNote != "" && m.KernelClockNote == "":
		m.KernelClockNote = rd.KernelClockNote
	}
	if rn.gotReady {
		return
	}
	rn.gotReady = true
	env := &rn.r.Env
	env.Python, env.Numpy, env.Torch, env.Triton, env.CUDARuntime = rd.Python, rd.Numpy, rd.Torch, rd.Triton, rd.CUDA
	rn.r.Methodology.Timer = rd.Timer
	rn.r.Methodology.FlushBytes = rd.FlushBytes
	rn.r.Methodology.TimerFloorMS = rd.TimerFloorMS
	if rn.gpu == nil || rd.Device.Kind != "cuda" {
		return
	}
	for i := range env.GPUs {
		if rd.Device.UUID != "" && env.GPUs[i].UUID == rd.Device.UUID {
			rn.gpu = &env.GPUs[i]
		}
	}
	if rn.gpu.SMCount == 0 {
		rn.gpu.SMCount = rd.Device.SMCount
	}
	if rn.gpu.L2Bytes == 0 {
		rn.gpu.L2Bytes = rd.Device.L2Bytes
	}
	if rn.gpu.ComputeCapability == "" {
		rn.gpu.ComputeCapability = rd.Device.ComputeCapability
	}
}

func (rn *runner) closeWorkers() {
	var wg sync.WaitGroup
	for _, im := range rn.impls {
		if im.w != nil {
			wg.Add(1)
			go func(w *harness.Worker) {
				defer wg.Done()
				w.Close(5 * time.Second)
			}(im.w)
			im.w = nil
		}
	}
	wg.Wait()
}

// kcase is the case being run: its results live in rn.r.Cases[idx].
type kcase struct {
	idx    int
	params spec.Params
	pj     []byte
	seeds  []int64
	dtype  string
}

func (rn *runner) res(kc *kcase, name string) *result.ImplResult {
	c := &rn.r.Cases[kc.idx]
	ir := c.Results[name]
	if ir == nil {
		// not_run until a step says otherwise, so that a results.json read
		// mid-run (or left by a crash) is valid.
		ir = &result.ImplResult{Status: result.ImplNotRun}
		c.Results[name] = ir
	}
	return ir
}

// runCase runs one sweep point: models, correctness, timing. It returns an
// error only when the run must stop (cancellation, the job's timeout).
func (rn *runner) runCase(ctx context.Context, p spec.Params) error {
	kc := &kcase{idx: len(rn.r.Cases), params: p, pj: harness.EncodeParams(p), seeds: rn.seeds()}
	if d, ok := p.Get("dtype"); ok {
		kc.dtype, _ = d.(string)
	}
	rn.r.Cases = append(rn.r.Cases, result.Case{Params: p.Map(), Label: p.Only(rn.varying).Label(), Results: map[string]*result.ImplResult{}})
	label := p.Label()
	if label == "" {
		label = "(no parameters)"
	}
	rn.logf("case %s", label)
	for _, im := range rn.impls {
		if im.skip != "" {
			*rn.res(kc, im.name) = result.ImplResult{Status: result.ImplSkipped, Error: im.skip}
		}
	}
	rn.write()
	rn.startAll(ctx, kc)
	if err := rn.models(ctx, kc); err != nil {
		return err
	}
	if err := rn.check(ctx, kc); err != nil {
		return err
	}
	if err := rn.time(ctx, kc); err != nil {
		return err
	}
	rn.throughput(kc)
	rn.write()
	return nil
}

// seeds returns the correctness seeds of a case: fixed ones, and a last one
// from crypto/rand that no implementation can know in advance.
func (rn *runner) seeds() []int64 {
	out := make([]int64, 0, rn.trials)
	for i := 1; i < rn.trials; i++ {
		out = append(out, int64(i))
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on Linux since 1.24
	}
	return append(out, int64(binary.LittleEndian.Uint32(b[:])&0x7fffffff))
}

// live reports whether im still runs on this case.
func (rn *runner) live(kc *kcase, im *impl) bool {
	if im.skip != "" {
		return false
	}
	ir := rn.r.Cases[kc.idx].Results[im.name]
	return ir == nil || ir.Status == result.ImplNotRun || ir.Status == result.ImplOK || ir.Status == result.ImplWrong
}

func (rn *runner) models(ctx context.Context, kc *kcase) error {
	b := &rn.s.Benchmark
	// A command benchmark owns its models; a Python one has them only when
	// the spec names them.
	if len(b.Command) == 0 && b.Flops == "" && b.Bytes == "" && b.Tokens == "" && b.Metrics == "" {
		return nil
	}
	c := &rn.r.Cases[kc.idx]
	var caseModel *result.Model
	for _, im := range rn.impls {
		if !rn.live(kc, im) {
			continue
		}
		w, err := rn.worker(ctx, im)
		if err == nil {
			var m *harness.Models
			octx, cancel := context.WithTimeout(ctx, rn.timeout)
			m, err = w.Models(octx, kc.pj)
			cancel()
			if err == nil {
				ir := rn.res(kc, im.name)
				model := m.Model()
				if caseModel == nil {
					caseModel = &model
					c.Flops, c.Bytes, c.Tokens = model.Flops, model.Bytes, model.Tokens
				} else if model != *caseModel {
					ir.Model = &model
				}
				ir.Metrics = m.Metrics
			}
		}
		if err != nil {
			if stop := rn.fail(ctx, kc, im, "models", err); stop != nil {
				return stop
			}
		}
	}
	rn.write()
	return nil
}

func (rn *runner) check(ctx context.Context, kc *kcase) error {
	b := &rn.s.Benchmark
	var jobs []*checkJob
	for _, im := range rn.impls {
		if !rn.live(kc, im) {
			continue
		}
		if im.isRef || b.Reference == "" {
			// The reference is right by definition; a command benchmark
			// without a reference checks nothing.
			rn.res(kc, im.name).Status = result.ImplOK
			continue
		}
		jobs = append(jobs, &checkJob{im: im})
	}
	// Every worker checks at the same time: the checks are independent,
	// and on large inputs each spends seconds making inputs and hashing
	// outputs on the host (a third of a 3 x 3 softmax run's wall time when
	// they took turns). Each outcome is recorded as it comes; one that ran
	// out of memory beside the others is checked again alone.
	var wg sync.WaitGroup
	var stop error
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rn.checkOne(ctx, kc, j)
			var he *harness.Error
			if len(jobs) > 1 && ctx.Err() == nil && errors.As(j.err, &he) && he.Kind == harness.KindOOM {
				j.again = true
				return
			}
			rn.mu.Lock()
			defer rn.mu.Unlock()
			if err := rn.applyCheck(ctx, kc, j); err != nil {
				stop = err
			}
		}()
	}
	wg.Wait()
	if stop != nil {
		return stop
	}
	for _, j := range jobs {
		if !j.again {
			continue
		}
		rn.logf("%s: out of memory while checking beside the other implementations: checking it alone", j.im.name)
		rn.checkOne(ctx, kc, j)
		if err := rn.applyCheck(ctx, kc, j); err != nil {
			return err
		}
	}
	return nil
}

// applyCheck records a finished check in the results. It returns a non-nil
// error when the whole run must stop (rn.fail).
func (rn *runner) applyCheck(ctx context.Context, kc *kcase, j *checkJob) error {
	if j.err != nil {
		return rn.fail(ctx, kc, j.im, "check", j.err)
	}
	ir := rn.res(kc, j.im.name)
	ir.Correctness = j.corr
	ir.Status = result.ImplOK
	if !j.corr.Passed {
		ir.Status = result.ImplWrong
		ir.Error = "wrong result: " + j.corr.Reason
		rn.logf("%s: WRONG: %s", j.im.name, j.corr.Reason)
	} else {
		rn.logf("%s: correct (max abs error %.3g, max rel error %.3g)", j.im.name, j.corr.MaxAbsError, j.corr.MaxRelError)
	}
	rn.write()
	return nil
}

// checkJob is one implementation's correctness check on a case.
type checkJob struct {
	im   *impl
	corr *result.Correctness
	err  error
	// again: it ran out of memory beside the others; check it alone.
	again bool
}

// checkOne runs j's check in its worker. It touches nothing but j and the
// worker, so that checks can run concurrently.
func (rn *runner) checkOne(ctx context.Context, kc *kcase, j *checkJob) {
	j.corr, j.err = nil, nil
	w, err := rn.worker(ctx, j.im)
	if err == nil {
		octx, cancel := context.WithTimeout(ctx, rn.timeout)
		j.corr, err = w.Check(octx, harness.Check{Params: kc.pj, Seeds: kc.seeds, Tolerance: tolerance(j.im.spec, &rn.s.Benchmark)})
		cancel()
	}
	j.err = err
}

// tolerance is the implementation's tolerance, else the benchmark's, else
// nil: the harness's default for each output's dtype.
func tolerance(im spec.Implementation, b *spec.Benchmark) *result.Tolerance {
	for _, t := range []*spec.Tolerance{im.Tolerance, b.Tolerance} {
		if t != nil {
			return &result.Tolerance{Atol: t.Atol, Rtol: t.Rtol}
		}
	}
	return nil
}

// clocks summarises the monitor's readings of the run's GPU while one
// implementation was timed on one case; nil without a monitor or a reading.
func (rn *runner) clocks(key windowKey) *result.Clocks {
	if rn.mon == nil || rn.gpu == nil {
		return nil
	}
	return rn.mon.Clocks(rn.gpu.Index, rn.windows[key])
}

// stopMonitor ends the clock readings and puts what they saw in the
// results: per timing, and per GPU over every window.
func (rn *runner) stopMonitor() {
	if rn.mon == nil {
		return
	}
	if err := rn.mon.Stop(); err != nil {
		rn.logf("GPU clock monitor: %v", err)
	}
	all := []gpuinfo.Window{}
	for key, ws := range rn.windows {
		all = append(all, ws...)
		if ir := rn.r.Cases[key.caseIdx].Results[key.name]; ir != nil && ir.Timing != nil {
			ir.Timing.Clocks = rn.clocks(key)
		}
	}
	for i := range rn.r.Env.GPUs {
		rn.r.Env.GPUs[i].During = rn.mon.Clocks(rn.r.Env.GPUs[i].Index, all)
	}
	rn.mon = nil
}

func (rn *runner) throughput(kc *kcase) { rn.throughputAt(kc.idx, kc.dtype) }

// newLoop is the timing loop of the run's method.
func (rn *runner) newLoop() *timing.Loop {
	m := &rn.r.Methodology
	return timing.New(timing.Config{
		Rule: rn.rule, Rounds: rn.rounds, WarmupMS: rn.warmupMS, Timeout: rn.timeout, CPU: rn.cpu,
		Flush: !rn.method.NoFlush && !rn.cpu, RestRatio: m.RestRatio, KernelClockMaxMS: m.KernelClockMaxMS,
		// The first worker's, once it is ready (noteReady).
		FirstLaunchMS: func() float64 { return m.LaunchMS },
		Logf:          rn.logf,
	})
}

// time runs the case's live implementations through the timing loop, each
// on its worker.
func (rn *runner) time(ctx context.Context, kc *kcase) error {
	var impls []timing.Impl
	for _, im := range rn.impls {
		if !rn.live(kc, im) {
			continue
		}
		impls = append(impls, timing.Impl{Name: im.name, Reference: im.isRef,
			Open: func(ctx context.Context) (timing.Sampler, error) {
				w, err := rn.worker(ctx, im)
				if err != nil {
					return nil, err
				}
				return w, nil
			}})
	}
	c := timing.Case{Params: kc.pj, Seed: kc.seeds[0], Baseline: rn.s.Benchmark.BaselineName()}
	return rn.loop.Case(ctx, c, impls, &caseRecorder{rn: rn, kc: kc})
}

// caseRecorder records the timing loop's findings on one case in the
// results (timing.Recorder).
type caseRecorder struct {
	rn *runner
	kc *kcase
}

func (c *caseRecorder) Timed(name string, from, to time.Time, t *result.Timing) {
	key := windowKey{c.kc.idx, name}
	c.rn.windows[key] = append(c.rn.windows[key], gpuinfo.Window{From: from, To: to})
	t.Clocks = c.rn.clocks(key)
	c.rn.res(c.kc, name).Timing = t
}

func (c *caseRecorder) Failed(name string, err error) {
	c.rn.res(c.kc, name).Timing = nil
	for _, im := range c.rn.impls {
		if im.name == name {
			c.rn.failed(c.kc, im, "time", err)
		}
	}
}

func (c *caseRecorder) Round() { c.rn.write() }

// settleLaunch gives every timing on the kernel clock the launch cost of
// the whole run (each was summarised with the estimate of its time), so
// that all of them add the same, and records it; ok is false when the run
// measured too few launch gaps to replace the first worker's.
func (rn *runner) settleLaunch(launch float64, ok bool) {
	if !ok {
		return
	}
	rn.r.Methodology.LaunchMS = launch
	for i := range rn.r.Cases {
		changed := false
		for _, ir := range rn.r.Cases[i].Results {
			changed = timing.ShiftLaunch(ir.Timing, launch) || changed
		}
		if changed {
			dtype, _ := rn.r.Cases[i].Params["dtype"].(string)
			rn.throughputAt(i, dtype)
		}
	}
}

func (rn *runner) throughputAt(idx int, dtype string) {
	c := &rn.r.Cases[idx]
	caseModel := result.Model{Flops: c.Flops, Bytes: c.Bytes, Tokens: c.Tokens}
	for _, ir := range c.Results {
		if ir.Timing == nil {
			continue
		}
		m := caseModel
		if ir.Model != nil {
			m = *ir.Model
		}
		ir.Throughput = analyze.Throughput(m, *ir.Timing, rn.gpu, dtype)
	}
}

// fail records err as im's outcome on the case. It returns a non-nil error
// when the whole run must stop (cancellation or the job's timeout).
func (rn *runner) fail(ctx context.Context, kc *kcase, im *impl, op string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rn.failed(kc, im, op, err)
	return nil
}

// failed records err, which op met while the run goes on, as im's outcome
// on the case.
func (rn *runner) failed(kc *kcase, im *impl, op string, err error) {
	ir := rn.res(kc, im.name)
	var he *harness.Error
	if !errors.As(err, &he) {
		ir.Status, ir.Error = result.ImplError, fmt.Sprintf("%s: %v", op, err)
		rn.logf("%s: %s", im.name, ir.Error)
		return
	}
	switch he.Kind {
	case harness.KindOOM:
		ir.Status = result.ImplOOM
	case harness.KindTimeout:
		ir.Status = result.ImplTimeout
	case harness.KindCrash, harness.KindCUDA:
		ir.Status = result.ImplCrashed
	default:
		ir.Status = result.ImplError
	}
	msg := he.Error()
	if he.Exit != "" && !strings.Contains(msg, he.Exit) {
		msg += " (" + he.Exit + ")"
	}
	if he.Traceback != "" {
		msg += "\n" + lastBytes(he.Traceback, harness.TailBytes)
	}
	ir.Error = msg
	ir.StderrTail = he.Tail
	ir.Timing = nil
	rn.logf("%s: %s during %s: %s", im.name, ir.Status, op, he.Error())
	// A CUDA error leaves the context unusable, and a timeout or crash
	// leaves no process: the next case gets a fresh worker.
	if he.Kind == harness.KindCUDA || he.Kind == harness.KindProtocol {
		if im.w != nil {
			im.w.Kill()
		}
	}
	rn.write()
}

func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// memoryLimit is the container's memory limit (0: none known).
func (rn *runner) memoryLimit() int64 {
	if c := rn.r.Env.Container; c != nil {
		return c.MemoryLimitBytes
	}
	return 0
}

// killStrays ends every process of the experiment that outlived its
// worker (a setsid child, a daemon) before the results are final: none
// may act after them, and none may stay on the GPU.
func (rn *runner) killStrays() {
	if rn.o.Worker == nil {
		return
	}
	killed, err := rn.o.Worker.KillAll("/proc", strayKillLimit)
	if err != nil {
		rn.logf("error: %v", err)
	}
	if len(killed) > 0 {
		msg := fmt.Sprintf("%d processes of the experiment's code outlived their workers and were killed (%s)", len(killed), countNames(killed))
		rn.logf("%s", msg)
		rn.strays = msg
	}
}

// countNames summarises names as "3 sleep, 1 python3", most frequent first.
func countNames(names []string) string {
	count := map[string]int{}
	for _, n := range names {
		count[n]++
	}
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", count[k], k)
	}
	return strings.Join(parts, ", ")
}

// strayKillLimit bounds how long killStrays keeps killing.
const strayKillLimit = 10 * time.Second

// finish evaluates the run, writes the files and posts them.
func (rn *runner) finish(parent, ctx context.Context, runErr error) (*result.Results, error) {
	rn.closeWorkers()
	rn.killStrays()
	r := rn.r
	var retErr error
	switch {
	case parent.Err() != nil:
		r.Status = result.StatusCancelled
		r.Error = "cancelled"
		retErr = parent.Err()
	case ctx.Err() != nil:
		r.Status = result.StatusTimeout
		r.Error = fmt.Sprintf("the job ran past resources.timeout (%s)", rn.s.Resources.Timeout.Duration)
	case errors.Is(runErr, errSetup):
		r.Status = result.StatusFailed
	}
	if r.Status != result.StatusRunning {
		// What the stop interrupted is not_run; checks already made stay.
		names := make([]string, len(rn.impls))
		for i, im := range rn.impls {
			names[i] = im.name
		}
		r.Interrupt(names, r.Error)
	}
	if rn.gpu != nil {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 30*time.Second)
		if after, err := gpuinfo.State(sctx); err == nil {
			for i := range r.Env.GPUs {
				r.Env.GPUs[i].After = after[r.Env.GPUs[i].Index]
			}
		} else {
			rn.logf("read GPU state after the run: %v", err)
		}
		cancel()
	}
	rn.stopMonitor()
	if rn.loop != nil {
		rn.settleLaunch(rn.loop.Launch())
	}
	r.Comparisons = analyze.Comparisons(r, r.Methodology.FastThreshold)
	crit, critOK := analyze.Criteria(rn.s, r)
	r.Criteria = crit
	r.Warnings = append(analyze.Warnings(r), profileWarnings(r.Profiles)...)
	if rn.strays != "" {
		r.Warnings = append(r.Warnings, result.Warning{Kind: analyze.WarnStrayProcesses, Message: rn.strays})
	}
	if r.Status == result.StatusRunning {
		switch {
		case rn.anyFailed():
			r.Status = result.StatusFailed
		case !critOK:
			r.Status = result.StatusCriteriaFailed
		default:
			r.Status = result.StatusSucceeded
		}
	}
	r.Success = r.Status == result.StatusSucceeded
	now := time.Now().UTC()
	r.FinishedAt = &now
	if err := result.WriteFile(rn.path, r); err != nil {
		// Without its results the run cannot be called anything but
		// failed, whatever it found: the client reads them from here.
		rn.logf("error: %v", err)
		return r, &InfraError{fmt.Errorf("write the final results: %w", err)}
	}
	if err := report.Text(rn.logFile, r); err != nil {
		rn.logf("render the results table: %v", err)
	}
	var md bytes.Buffer
	if err := report.Markdown(&md, r); err != nil {
		rn.logf("render results.md: %v", err)
	} else if err := os.WriteFile(filepath.Join(rn.o.OutDir, "results.md"), md.Bytes(), 0o644); err != nil {
		rn.logf("write results.md: %v", err)
	}
	rn.post(parent)
	rn.logf("status: %s", r.Status)
	return r, retErr
}

// anyFailed reports an implementation (or the reference) that did not run
// to the end, or ran wrong.
func (rn *runner) anyFailed() bool {
	for _, c := range rn.r.Cases {
		for _, ir := range c.Results {
			switch ir.Status {
			case result.ImplOK, result.ImplSkipped:
			default:
				return true
			}
		}
	}
	return false
}

func (rn *runner) post(parent context.Context) {
	if rn.o.PostURL == "" {
		return
	}
	body, err := os.ReadFile(rn.path)
	if err != nil {
		rn.logf("post results: read %s: %v", rn.path, err)
		return
	}
	// Cancelled runs still report; the post gets its own bounded time.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 2*time.Minute)
	defer cancel()
	if err := post.Post(ctx, rn.o.PostURL, rn.o.PostToken, body, post.Options{Logf: rn.logf}); err != nil {
		rn.logf("post results: %v (results.json is kept in %s)", err, rn.o.OutDir)
		return
	}
	rn.logf("posted results")
}

// write saves results.json; a failure is logged once and the run goes on
// (the final write reports it again).
func (rn *runner) write() {
	if err := result.WriteFile(rn.path, rn.r); err != nil && !rn.writeErred {
		rn.writeErred = true
		rn.logf("error: %v", err)
	}
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

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

// syncWriter serialises writes from the runner and its workers' goroutines;
// the writers to runner.log share one mutex.
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
