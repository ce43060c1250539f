package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/sandbox"
	"github.com/xrun-dev/xrun/spec"
)

// pool starts the implementations' workers: one process each, started
// when a case first needs it (startAll starts a case's at once), again
// after a crash, and closed at the end (closeWorkers).
type pool struct {
	argv []string // the harness in its Python, or the spec's command
	env  []string
	// dir is the experiment, the workers' working directory; outDir gets
	// their logs.
	dir, outDir string
	as          *sandbox.User
	memoryLimit int64
	timeout     time.Duration // per command; init gets at least minInitTimeout
	base        harness.Init  // what every implementation's init shares
	tmp         string        // holds the harness while the run lasts
	logf        func(format string, args ...any)
	ready       func(*harness.Ready) // hears what every started worker reports
	// zygote forks the Python workers once it has imported their heavy
	// modules; nil when they start on their own (a command benchmark,
	// Options.NoZygote, or the zygote failed to start or died).
	zygote *harness.Zygote
	zmu    sync.Mutex
	// fresh runs an implementation again with fresh compile caches when
	// it fails with the volume's.
	fresh *freshCaches
}

// newPool finds the interpreter and writes the harness (or takes the
// spec's command), makes the workers' environment and limits the worker
// user's processes; the pool's caller removes p.tmp.
func (rn *runner) newPool(ctx context.Context) (*pool, error) {
	s, o, r := rn.s, rn.o, rn.rec.r
	b := &s.Benchmark
	device := "cuda"
	if rn.cpu {
		device = "cpu"
	}
	p := &pool{
		env: workerEnv(o.ExperimentDir, s.Include, device, o.CacheDir), dir: o.ExperimentDir, outDir: o.OutDir, as: o.Worker,
		timeout: rn.timeout, base: rn.baseInit(b), logf: rn.logf, ready: rn.noteReady,
	}
	if c := r.Env.Container; c != nil {
		p.memoryLimit = c.MemoryLimitBytes
	}
	p.fresh = newFreshCaches(r.Env.Cache, p.env, &rn.mu, rn.logf)
	if o.Worker != nil {
		n, err := o.Worker.LimitProcs("/sys/fs/cgroup")
		if err != nil {
			return nil, &InfraError{err}
		}
		if c := r.Env.Container; c != nil {
			c.WorkerUser, c.WorkerProcsLimit = o.Worker.String(), n
		}
		rn.logf("the experiment's code runs as uid %d, apart from the runner (at most %d processes and threads: the container's limit less the runner's 256)", o.Worker.UID, n)
	}
	if len(b.Command) > 0 {
		p.argv = append([]string(nil), b.Command...)
		if strings.ContainsRune(p.argv[0], '/') && !filepath.IsAbs(p.argv[0]) {
			p.argv[0] = filepath.Join(o.ExperimentDir, p.argv[0])
		}
		r.Env.Extra = map[string]string{"benchmark": "command"}
		return p, nil
	}
	warm := o.Warm != nil && p.useWarm(o.Warm)
	if !warm {
		argv, tmp, err := prepareHarness(ctx, o.Python, o.Worker)
		if err != nil {
			return nil, &InfraError{err}
		}
		p.argv, p.tmp = argv, tmp
	}
	py, script := p.argv[0], p.argv[2]
	p.fresh.copyBack = func(ctx context.Context, src, dst string) (int, error) {
		return copyCaches(ctx, py, script, p.dir, p.env, p.as, src, dst)
	}
	if !rn.cpu {
		r.Methodology.AutotuneCache = rn.autotuneCache(ctx, py, script, p)
	}
	r.Env.Extra = map[string]string{"python_executable": py}
	rn.logf("python: %s", py)
	// The zygote imports while the references are checked.
	zygote := make(chan struct{})
	go func() {
		defer close(zygote)
		switch {
		case warm:
			p.adoptZygote(o.Warm)
		case !o.NoZygote:
			p.startZygote()
		}
	}()
	err := rn.checkRefs(ctx, py, p.env)
	<-zygote
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// startZygote starts the zygote the workers are forked from; without one
// they start on their own, as they do after the log line says why.
func (p *pool) startZygote() {
	start := time.Now()
	z, err := startZygote(p.argv, p.dir, p.env, p.as, p.outDir)
	if err != nil {
		p.logf("workers start on their own: %v", err)
		return
	}
	p.logf("zygote: imported %s in %.1f s; workers are forked from it", strings.Join(z.Loaded, ", "), time.Since(start).Seconds())
	p.zygote = z
}

// startZygote starts the zygote of harness argv in dir with env, as user
// as, its output in outDir/logs/zygote.log.
func startZygote(argv []string, dir string, env []string, as *sandbox.User, outDir string) (*harness.Zygote, error) {
	log, err := os.OpenFile(filepath.Join(outDir, "logs", "zygote.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the zygote's process holds its own descriptor
	return harness.StartZygote(argv, dir, env, as, log)
}

// prepareHarness finds Python (python, else the first python3 with numpy)
// and writes the harness into a new directory, tmp, which the caller
// removes: argv runs it.
func prepareHarness(ctx context.Context, python string, worker *sandbox.User) (argv []string, tmp string, err error) {
	py, err := harness.FindPython(ctx, python, worker)
	if err != nil {
		return nil, "", err
	}
	if tmp, err = harnessDir(worker != nil); err != nil {
		os.RemoveAll(tmp)
		return nil, "", fmt.Errorf("write the harness: %w", err)
	}
	script, err := harness.WriteScript(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, "", err
	}
	return []string{py, "-u", script}, tmp, nil
}

// start starts a worker for c: forked from the zygote when there is one,
// else on its own. A zygote that fails is dropped for the rest of the run.
func (p *pool) start(c harness.Config) (*harness.Worker, error) {
	p.zmu.Lock()
	z := p.zygote
	p.zmu.Unlock()
	if z != nil {
		w, err := z.Start(c)
		if err == nil {
			return w, nil
		}
		p.zmu.Lock()
		if p.zygote == z {
			p.zygote = nil
			p.logf("workers start on their own from now: %v", err)
			go z.Close()
		}
		p.zmu.Unlock()
	}
	return harness.Start(c)
}

// closeZygote ends the zygote; the workers are closed first. A run
// stopped before it had a pool (cancelled while it looked for Python) has
// nothing to close.
func (p *pool) closeZygote() {
	if p == nil {
		return
	}
	p.zmu.Lock()
	z := p.zygote
	p.zygote = nil
	p.zmu.Unlock()
	if z != nil {
		z.Close()
	}
}

// close ends the zygote and removes the harness.
func (p *pool) close() {
	p.closeZygote()
	if p.tmp != "" {
		os.RemoveAll(p.tmp)
	}
}

// harnessDir makes the directory the harness is written to: a temporary
// one, under contract.RunnerDir when the experiment runs as another user,
// who may read it but not change it.
func harnessDir(sandboxed bool) (string, error) {
	root := ""
	if sandboxed {
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

// baseInit is the part of init every implementation's worker shares.
func (p *plan) baseInit(b *spec.Benchmark) harness.Init {
	init := harness.Init{
		Reference: b.Reference, Inputs: b.Inputs, Metrics: b.Metrics,
		Device: "cuda", Flush: !p.method.NoFlush, FlushBytes: int64(p.method.FlushBytes),
		CUDAGraph: p.method.CUDAGraph, KernelClock: p.method.KernelClockOn(),
	}
	if p.cpu {
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
	return init
}

// implInit is base for im: its function (the reference's, for the
// reference) and its own parameters.
func implInit(base harness.Init, im *impl) harness.Init {
	init := base
	init.Impl, init.Fn = im.name, im.spec.Fn
	if im.isRef {
		init.Fn = base.Reference
	} else if len(im.spec.Params) > 0 {
		init.ImplParams = harness.EncodeParams(im.spec.Params)
	}
	return init
}

// config is how to start a worker for name: argv, logging to
// logs/<name><suffix>.
func (p *pool) config(name string, argv []string, suffix string) harness.Config {
	return harness.Config{
		Name: name, Argv: argv, Dir: p.dir, Env: p.env,
		LogPath: filepath.Join(p.outDir, "logs", safeName(name)+suffix),
		Logf:    p.logf, As: p.as, MemoryLimitBytes: p.memoryLimit,
	}
}

// worker returns im's worker, starting it (and sending init) when it has
// none or its last one died; one that fails to start with the volume's
// compile caches starts again with fresh ones (freshCaches).
func (p *pool) worker(ctx context.Context, im *impl) (*harness.Worker, error) {
	w, err := p.open(ctx, im)
	if err != nil && p.fresh.again(ctx, im, "start", err) {
		w, err = p.open(ctx, im)
		p.fresh.done(ctx, im, err)
	}
	return w, err
}

// open is worker, once.
func (p *pool) open(ctx context.Context, im *impl) (*harness.Worker, error) {
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
	begin := time.Now()
	var w *harness.Worker
	var err error
	if im.fresh != "" {
		// On its own: the zygote's environment points into the volume.
		c := p.config(im.name, p.argv, ".log")
		c.Env = freshEnv(c.Env, p.fresh.shared, im.fresh)
		w, err = harness.Start(c)
	} else {
		w, err = p.start(p.config(im.name, p.argv, ".log"))
	}
	if err != nil {
		im.initErr = &harness.Error{Kind: harness.KindCrash, Where: "harness", Message: err.Error()}
		return nil, im.initErr
	}
	// Imports get at least minInitTimeout: on a loaded machine importing
	// torch in several workers at once is slow, not hung.
	opCtx, cancel := context.WithTimeout(ctx, max(p.timeout, minInitTimeout))
	defer cancel()
	p.logf("%s: starting worker", im.name)
	ready, err := w.Init(opCtx, implInit(p.base, im))
	if err != nil {
		w.Close(time.Second)
		var he *harness.Error
		if errors.As(err, &he) && (he.Kind == harness.KindImport || he.Kind == harness.KindException) {
			im.initErr = he // importing is the same in every case
		}
		return nil, err
	}
	im.w = w
	p.logf("%s: ready in %.1f s%s", im.name, time.Since(begin).Seconds(), initSteps(ready.InitMS))
	p.ready(ready)
	return w, nil
}

// initStepOrder is the order of a worker's init steps (xrun_harness
// worker.py and gpu/sampler.py).
var initStepOrder = []string{"imports", "code", "cuda", "flush", "spin", "hold", "timer_floor", "kernel_clock"}

// initSteps says what a worker's init spent its time on, the steps over
// 50 ms, in their order: " (imports 2.1 s, cuda 0.4 s)".
func initSteps(ms map[string]float64) string {
	var parts []string
	for _, k := range initStepOrder {
		if v := ms[k]; v >= 50 {
			parts = append(parts, fmt.Sprintf("%s %.1f s", strings.ReplaceAll(k, "_", " "), v/1e3))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// startAll starts the workers of impls that have none at the same time:
// importing torch takes seconds, and workers start again after a crash.
// A failure is kept for the implementation's next use to report.
func (p *pool) startAll(ctx context.Context, impls []*impl) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, max(2, runtime.NumCPU()))
	for _, im := range impls {
		if im.initErr != nil || (im.w != nil && !im.w.Exited()) {
			continue
		}
		wg.Add(1)
		go func(im *impl) {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			if _, err := p.worker(ctx, im); err != nil {
				im.startErr = err
			}
		}(im)
	}
	wg.Wait()
}

// closeWorkers tells every worker of impls to exit, and waits.
func closeWorkers(impls []*impl) {
	var wg sync.WaitGroup
	for _, im := range impls {
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

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string { return unsafeChars.ReplaceAllString(s, "_") }
