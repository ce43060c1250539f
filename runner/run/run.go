// Package run is the runner's orchestrator: it loads the experiment, records
// the environment, starts a worker per implementation, checks each against
// the reference on every case, times them in interleaved rounds until the
// stopping rule is met, evaluates the criteria, and writes results.json
// (after every step, so partial results survive a crash), results.md and
// the optional POST.
//
// Run is the sequence; each step has its file: plan.go (device, method,
// implementations), pool.go (workers), check.go (models and correctness),
// timing.go (the timing loop of runner/timing, fed by the workers),
// record.go (results.json, the end of the run, the POST) and profile.go
// (Nsight Compute).
package run

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/analyze"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/gpuinfo"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/sandbox"
	"github.com/xrun-dev/xrun/runner/timing"
	"github.com/xrun-dev/xrun/spec"
)

// Options says what to run and where to put the results.
type Options struct {
	// ExperimentDir holds xrun.yaml; OutDir receives results.json,
	// results.md, runner.log and logs/<implementation>.log.
	ExperimentDir, OutDir string
	// Mode is "gpu", "cpu" or "" (gpu when nvidia-smi finds a GPU).
	Mode string
	// CPUHint is how the caller asks for the CPU sweep, for the error on a
	// machine without a GPU ("" is XRUN_MODE=cpu, the runner's own).
	CPUHint string
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
	// HostBusyShare is XRUN_HOST_BUSY_SHARE: the contention at or above
	// which a CPU timing gets a host_busy warning, a share, or "off"
	// ("": analyze.HostBusyShare).
	HostBusyShare string
	// NoZygote starts every Python worker on its own, importing its
	// modules itself, rather than forked from the zygote.
	NoZygote bool
	// OutToLog writes OutDir into the log (stdout) at the end, for a
	// backend that keeps the log but not the files (contract.WriteOut).
	OutToLog bool
	// Profile asks for Nsight Compute reports after the timed cases
	// (XRUN_PROFILE; the syntax of profile.Parse). "" asks for none.
	Profile string
	// Retune forgets the autotune results stored in the compile caches
	// before the run (XRUN_RETUNE=1; the spec's method.retune does too).
	Retune bool
	// HostName is the machine's name as the client knows it
	// (XRUN_HOST_NAME); "" records the runner's own host name.
	HostName string
	// CacheDir holds the compile caches (default contract.CacheDir; the
	// workers get none where it does not exist), and CacheVolume names the
	// volume it is, kept across jobs (XRUN_CACHE_VOLUME; "" when the
	// caches are the job's own).
	CacheDir, CacheVolume string
	// CacheLimit is XRUN_CACHE_LIMIT, the most bytes the compile caches
	// may hold as the job starts ("": contract.DefaultCacheLimit with a
	// cache volume, else none; cachetrim.go); cacheLimit is it parsed.
	CacheLimit string
	cacheLimit int64
	// Split is XRUN_SPLIT, "K/N": the run takes part K of the sweep split
	// over N jobs (result.Split); "" runs the whole sweep. split is it
	// parsed.
	Split string
	split *result.Split
	// Worker is the user every process of the experiment runs as, apart
	// from the runner (runner/sandbox); nil runs them as the runner's own
	// user. With one, OutDir must be the runner's alone.
	Worker *sandbox.User
	// OwnTree says that every process this one starts is the job's, as in
	// the runner process of `xrun run --local`, where the experiment's code
	// runs as the runner's own user: the runner then adopts the orphans of
	// its tree and kills whatever is left of it before the results are
	// final. Never in a process that runs other jobs (a test's).
	OwnTree bool
	// Warm is what a standby prepared before the job came (standby.go);
	// nil: the run prepares everything itself.
	Warm *Warm

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

const referenceName = result.Reference

// Run runs the experiment in o.ExperimentDir and returns its results. The
// error is a *SpecError, an *InfraError, or ctx's error on cancellation;
// failures of implementations are in the results, not in the error.
func Run(ctx context.Context, o Options) (*result.Results, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	logFile, err := openOutput(o)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	mu := new(sync.Mutex)
	rn := &runner{prog: progressState{start: time.Now()}, o: o, log: &syncWriter{mu: mu, w: io.MultiWriter(o.Log, logFile)}, logFile: &syncWriter{mu: mu, w: logFile}}
	rn.rec = &recorder{path: filepath.Join(o.OutDir, result.FileName), logf: rn.logf}
	rn.clocks = &clockMonitor{windows: map[windowKey][]gpuinfo.Window{}}
	if o.OwnTree && o.Worker == nil {
		// The experiment's code runs as this process's user: its
		// processes cannot be told by their uid (killStrays), so the
		// runner adopts every orphan of its tree, to kill them all
		// before the results are final.
		if err := sandbox.AdoptOrphans(); err != nil {
			rn.logf("warning: processes of the experiment's code that leave their workers' process groups may outlive the run: %v", err)
		}
	}
	return rn.run(ctx)
}

// withDefaults checks o and fills in the container's directories and a
// log, before any I/O.
func (o Options) withDefaults() (Options, error) {
	if o.ExperimentDir == "" {
		o.ExperimentDir = contract.ExperimentDir
	}
	if o.OutDir == "" {
		o.OutDir = contract.OutDir
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.CacheDir == "" {
		o.CacheDir = contract.CacheDir
	}
	limit, err := cacheLimit(func(string) string { return o.CacheLimit }, o.CacheVolume)
	if err != nil {
		return o, &SpecError{err}
	}
	o.cacheLimit = limit
	if o.split, err = result.ParseSplit(o.Split); err != nil {
		return o, &SpecError{fmt.Errorf("%s: %w", contract.EnvSplit, err)}
	}
	switch o.Mode {
	case "", "gpu", "cpu":
	default:
		return o, &SpecError{fmt.Errorf("mode %q: use gpu or cpu", o.Mode)}
	}
	if _, err := o.busyShare(); err != nil {
		return o, &SpecError{err}
	}
	expDir, err := filepath.Abs(o.ExperimentDir)
	if err != nil {
		return o, &SpecError{fmt.Errorf("experiment directory %q: %w", o.ExperimentDir, err)}
	}
	o.ExperimentDir = expDir
	return o, nil
}

// busyShare is HostBusyShare as a number: 0 for off.
func (o Options) busyShare() (float64, error) {
	switch o.HostBusyShare {
	case "":
		return analyze.HostBusyShare, nil
	case "off":
		return 0, nil
	}
	v, err := strconv.ParseFloat(o.HostBusyShare, 64)
	if err != nil || !(v > 0 && v <= 1) {
		return 0, fmt.Errorf("%s=%q: a share of the CPUs above 0 and at most 1 (0.1 is 10 %%), or off", contract.EnvHostBusyShare, o.HostBusyShare)
	}
	return v, nil
}

// openOutput makes the output directory, checks that it is the runner's
// alone when the experiment runs as another user, and opens runner.log.
func openOutput(o Options) (*os.File, error) {
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
	logFile, err := os.OpenFile(filepath.Join(o.OutDir, "runner.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, &InfraError{fmt.Errorf("open runner.log in %s (is the output directory writable?): %w", o.OutDir, err)}
	}
	return logFile, nil
}

// runner is one run: the steps' owners, and what the sequence passes
// from one step to the next.
type runner struct {
	o       Options
	s       *spec.Spec
	log     io.Writer
	logFile io.Writer // runner.log alone

	rec    *recorder     // the results and results.json
	plan                 // device, method, what runs here
	pool   *pool         // the workers
	impls  []*impl       // reference first, then the spec's order
	loop   *timing.Loop  // the timing loop, across the cases
	clocks *clockMonitor // the GPU's clocks while timing
	prof   *profiling    // the Nsight Compute request; nil: none
	// varying are the parameters that differ between cases: they label them.
	varying []string
	// mu guards what concurrent worker starts and checks share: the
	// results and the GPU the workers report (noteReady).
	mu       sync.Mutex
	gotReady bool // a worker reported its environment
	// strays says how many processes of the experiment outlived their
	// workers, once killStrays killed them.
	strays string
	// prog is where the run is, for its progress lines.
	prog progressState
}

// progressState is what the progress lines say besides the phase.
type progressState struct {
	start     time.Time // the runner's start
	caseN     int       // the case running, from 1
	cases     int
	caseStart time.Time
	done      time.Duration // the finished cases' time
}

// progress logs the run's progress line (contract.Progress): the case, the
// phase, the implementation being timed, and the times an estimate of the
// rest needs.
func (rn *runner) progress(phase, impl string) {
	p := &rn.prog
	if p.caseN == 0 {
		return
	}
	now := time.Now()
	e := contract.Progress{Case: p.caseN, Cases: p.cases, Phase: phase, Impl: impl,
		Elapsed: now.Sub(p.start).Seconds(), CaseStart: p.caseStart.Sub(p.start).Seconds(), Done: p.done.Seconds()}
	rn.logf("%s", e.Line())
}

func (rn *runner) logf(format string, args ...any) {
	fmt.Fprintf(rn.log, "%s %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// run is the sequence: the spec, the job's clock, the machine, the device
// and method, the workers' command, setup, every case, the profiles, and
// finish, which every path after the spec ends in.
func (rn *runner) run(parent context.Context) (*result.Results, error) {
	o := rn.o
	r := rn.rec.start(o)
	rn.logf("xrun-runner %s: experiment %s, output %s", r.RunnerVersion, o.ExperimentDir, o.OutDir)
	s, err := spec.Load(o.ExperimentDir)
	if err != nil {
		return rn.rec.abort(&SpecError{err})
	}
	rn.s = s
	r.Experiment, r.SpecHash = s.Name, s.Hash
	r.Implementations = s.Benchmark.Implementations.Names()
	r.Baseline = s.Benchmark.BaselineName()
	if err := result.WriteFile(rn.rec.path, r); err != nil {
		return nil, &InfraError{fmt.Errorf("write %s (is the output directory writable?): %w", rn.rec.path, err)}
	}

	ctx := parent
	if t := s.Resources.Timeout.Duration; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, t)
		defer cancel()
	}
	trim := rn.trimCaches()
	r.Env = hostEnv(ctx, o, s.Include)
	if c := r.Env.Cache; c != nil {
		c.Limit, c.TrimmedEntries, c.TrimmedBytes = o.cacheLimit, trim.Entries, trim.Bytes
	}
	if err := rn.pickMode(ctx); err != nil {
		return rn.abortStopped(parent, ctx, err)
	}
	r.Methodology = rn.setMethod(s.Benchmark.Method)
	rn.loop = rn.newLoop()
	if rn.prof, err = newProfiling(o.Profile, s, rn.cpu, rn.logf); err != nil {
		return rn.rec.abort(&SpecError{err})
	}
	if rn.gpu != nil && !o.NoClockMonitor {
		if err := rn.clocks.start(ctx); err != nil {
			rn.logf("clocks will be read only before and after the run: %v", err)
		}
		defer rn.clocks.abandon()
	}
	if rn.pool, err = rn.newPool(ctx); err != nil {
		return rn.abortStopped(parent, ctx, err)
	}
	defer rn.pool.close()
	rn.impls = rn.implementations()
	defer closeWorkers(rn.impls)

	var runErr error
	if s.Benchmark.Setup != "" {
		runErr = rn.setup(ctx)
	}
	if runErr == nil {
		all := s.Benchmark.Cases(rn.cpu)
		// A part's labels are the whole sweep's, so that its cases read
		// as they would in one job.
		rn.varying = spec.VaryingKeys(all)
		cases := rn.ownCases(all)
		rn.prog.cases = len(cases)
		for i, p := range cases {
			rn.prog.caseN, rn.prog.caseStart = i+1, time.Now()
			if runErr = rn.runCase(ctx, p); runErr != nil {
				if ctx.Err() != nil {
					// Stopped: the cases it never started are in the
					// results too, not run (finish says why), so that
					// a cancelled sweep's table shows the whole sweep.
					for _, p := range cases[i+1:] {
						rn.rec.r.Cases = append(rn.rec.r.Cases, result.Case{Params: p.Map(), Label: p.Only(rn.varying).Label(),
							Results: map[string]*result.ImplResult{}})
					}
				}
				break
			}
			rn.prog.done += time.Since(rn.prog.caseStart)
		}
	}
	if runErr == nil && rn.prof != nil && ctx.Err() == nil {
		// Nsight Compute's processes have the GPU to themselves.
		closeWorkers(rn.impls)
		rn.profileAll(ctx)
	}
	return rn.finish(parent, ctx, runErr)
}

// ownCases are the cases of the sweep all that this run takes: all of
// them, or its part's (Options.Split).
func (rn *runner) ownCases(all []spec.Params) []spec.Params {
	sp := rn.o.split
	if sp == nil || sp.Parts == 1 {
		return all
	}
	var own []spec.Params
	for i, p := range all {
		if sp.Takes(i) {
			own = append(own, p)
		}
	}
	rn.logf("part %s of the sweep: %d of its %d cases (%s)", sp, len(own), len(all), sp.Every())
	return own
}

// kcase is the case being run: its results live in rec.r.Cases[idx].
type kcase struct {
	idx    int
	params spec.Params
	pj     []byte
	seeds  []int64
	dtype  string
}

// runCase runs one sweep point: models, correctness, timing. It returns an
// error only when the run must stop (cancellation, the job's timeout).
func (rn *runner) runCase(ctx context.Context, p spec.Params) error {
	r := rn.rec.r
	kc := &kcase{idx: len(r.Cases), params: p, pj: harness.EncodeParams(p), seeds: rn.seeds()}
	if d, ok := p.Get("dtype"); ok {
		kc.dtype, _ = d.(string)
	}
	r.Cases = append(r.Cases, result.Case{Params: p.Map(), Label: p.Only(rn.varying).Label(), Results: map[string]*result.ImplResult{}})
	label := p.Label()
	if label == "" {
		label = "(no parameters)"
	}
	rn.logf("case %s", label)
	rn.progress(contract.PhaseCheck, "")
	for _, im := range rn.impls {
		if im.skip != "" {
			*rn.rec.res(kc.idx, im.name) = result.ImplResult{Status: result.ImplSkipped, Error: im.skip}
		}
	}
	rn.rec.write()
	rn.pool.startAll(ctx, rn.live(kc))
	if err := rn.models(ctx, kc); err != nil {
		return err
	}
	if err := rn.first(ctx, kc); err != nil {
		return err
	}
	if err := rn.check(ctx, kc); err != nil {
		return err
	}
	if err := rn.time(ctx, kc); err != nil {
		return err
	}
	rn.throughput(kc.idx, kc.dtype)
	rn.rec.write()
	return nil
}

// live returns the implementations that still run on this case.
func (rn *runner) live(kc *kcase) []*impl {
	var out []*impl
	for _, im := range rn.impls {
		if im.skip != "" {
			continue
		}
		ir := rn.rec.r.Cases[kc.idx].Results[im.name]
		if ir == nil || ir.Status == result.ImplNotRun || ir.Status == result.ImplOK || ir.Status == result.ImplWrong {
			out = append(out, im)
		}
	}
	return out
}

// setup runs the spec's setup command once, in the experiment directory.
func (rn *runner) setup(ctx context.Context) error {
	rn.logf("setup: %s", rn.s.Benchmark.Setup)
	cmd := exec.CommandContext(ctx, "sh", "-c", rn.s.Benchmark.Setup)
	cmd.Dir, cmd.Env = rn.o.ExperimentDir, rn.pool.env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	rn.o.Worker.Apply(cmd.SysProcAttr)
	cmd.Stdout, cmd.Stderr = rn.log, rn.log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rn.rec.r.Error = fmt.Sprintf("setup %q failed: %v (its output is in runner.log)", rn.s.Benchmark.Setup, err)
		rn.logf("error: %s", rn.rec.r.Error)
		return errSetup
	}
	return nil
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
