package run

import (
	"bufio"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/version"
	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

// OptionsFromEnv reads the XRUN_* variables into Options. Log is left nil
// (Run then logs nowhere but runner.log).
func OptionsFromEnv() Options {
	return Options{
		ExperimentDir:  os.Getenv(contract.EnvExperiment),
		OutDir:         os.Getenv(contract.EnvOut),
		Mode:           os.Getenv(contract.EnvMode),
		Python:         os.Getenv(contract.EnvPython),
		JobID:          os.Getenv(contract.EnvJobID),
		ClientVersion:  os.Getenv(contract.EnvClientVersion),
		ImageRef:       os.Getenv(contract.EnvImageRef),
		ImageDigest:    os.Getenv(contract.EnvImageDigest),
		CodeHash:       os.Getenv(contract.EnvCodeHash),
		GitCommit:      os.Getenv(contract.EnvGitCommit),
		GitDirty:       os.Getenv(contract.EnvGitDirty) == "1",
		PostURL:        os.Getenv(contract.EnvPostURL),
		PostToken:      postToken(),
		NoClockMonitor: os.Getenv(contract.EnvClockMonitor) == "off",
		HostBusyShare:  os.Getenv(contract.EnvHostBusyShare),
		NoZygote:       os.Getenv(contract.EnvZygote) == "off",
		OutToLog:       os.Getenv(contract.EnvOutToLog) == "1",
		OwnTree:        os.Getenv(contract.EnvOwnTree) == "1",
		Profile:        os.Getenv(contract.EnvProfile),
		Retune:         os.Getenv(contract.EnvRetune) == "1",
		HostName:       os.Getenv(contract.EnvHostName),
		CacheVolume:    os.Getenv(contract.EnvCacheVolume),
		CacheLimit:     os.Getenv(contract.EnvCacheLimit),
		Split:          os.Getenv(contract.EnvSplit),
	}
}

// postToken is XRUN_POST_TOKEN, else the token the client copied into
// the container (contract.PostTokenFile), which the container's
// configuration does not show.
func postToken() string {
	if t := os.Getenv(contract.EnvPostToken); t != "" {
		return t
	}
	b, err := os.ReadFile(contract.PostTokenFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// hostEnv records what the runner knows about the machine before any worker
// starts; Python and package versions come later from the first worker.
// includes are the spec's, for the git state of a run outside a container.
func hostEnv(ctx context.Context, o Options, includes []string) result.Env {
	env := result.Env{OS: runtime.GOOS, Arch: runtime.GOARCH, CPU: cpuModel(), GPUs: []result.GPU{}}
	env.Host = o.HostName
	if env.Host == "" {
		env.Host, _ = os.Hostname()
	}
	env.Container = containerFacts("/")
	env.Cache = cacheFacts(o.CacheDir, o.CacheVolume)
	env.GitCommit, env.GitDirty = o.GitCommit, o.GitDirty
	// git reads the experiment's own .git (hooks, fsmonitor): only a run
	// that trusts that code, outside the sandbox, asks it.
	if env.GitCommit == "" && o.Worker == nil {
		env.GitCommit, env.GitDirty = version.GitHead(ctx, o.ExperimentDir, includes...)
	}
	return env
}

// cpuModel reads the CPU's model name from /proc/cpuinfo (Linux only).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// workerEnv is this process's environment with the workers' additions,
// the compile caches in cacheDir.
func workerEnv(expDir string, includes []string, device, cacheDir string) []string {
	var env []string
	existing := ""
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PYTHONPATH":
			existing = v
			continue
		case "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "XRUN_DEVICE", contract.EnvPostToken, contract.EnvZygotePreload:
			continue // set below, or not for experiment code to see
		}
		env = append(env, kv)
	}
	env = append(env,
		"PYTHONPATH="+harness.PythonPath(expDir, includes, existing),
		"PYTHONUNBUFFERED=1",
		// The experiment directory may be read-only, or a user's checkout
		// that should not fill with __pycache__.
		"PYTHONDONTWRITEBYTECODE=1",
		"XRUN_DEVICE="+device,
	)
	for _, d := range compilerDefaults {
		if _, set := os.LookupEnv(d.name); !set {
			env = append(env, d.name+"="+d.value)
		}
	}
	return append(env, cacheEnv(cacheDir)...)
}

// zygoteEnv is the zygote's environment: the workers' (env) and, when
// preload names modules (comma-separated), the variable that has it
// import them too.
func zygoteEnv(env []string, preload string) []string {
	if preload == "" {
		return env
	}
	return append(slices.Clone(env), contract.EnvZygotePreload+"="+preload)
}

// compilerDefaults are compiler settings the workers get unless the job's
// environment sets them (the spec's env or submit --env).
var compilerDefaults = []struct{ name, value string }{
	// AOTAutograd's cache (torch.compile of code that runs backward) is
	// off: with torch 2.11 its save crashes the process (SIGSEGV in
	// pickle, in the autograd thread, pytorch/pytorch#177442) in a cold
	// first compile, and a warm load of it gave code that computed garbage
	// shapes. 058 backward on one H100 crashed in 5 of 5 cold compiles with
	// it (the crash does not come every time) and on two in none without
	// it; Inductor's own cache still serves the
	// compiled kernels (docs/performance.md, "torch.compile and the
	// caches").
	{"TORCHINDUCTOR_AUTOGRAD_CACHE", "0"},
	// Triton's autotuners store the config they chose in Triton's cache,
	// keyed by the kernel's code, its configs, the autotune key, the GPU's
	// architecture and Triton's version, and a later run of the same code
	// reads it instead of tuning again: a rerun or a nightly times the
	// config the first run chose (docs/performance.md, "Autotuned
	// kernels"; retune forgets them).
	{"TRITON_CACHE_AUTOTUNING", "1"},
}

// cacheVars point each compiler's cache into the job's cache directory:
// Triton's, TorchInductor's (which keeps Triton's kernels in Triton's),
// torch's CUDA extension builds, and the CUDA driver's JIT cache of PTX.
var cacheVars = []struct{ name, dir string }{
	{"TRITON_CACHE_DIR", "triton"},
	{"TORCHINDUCTOR_CACHE_DIR", "inductor"},
	{"TORCH_EXTENSIONS_DIR", "torch_extensions"},
	{"CUDA_CACHE_PATH", "nv"},
}

// cacheEnv is the environment that points the compile caches into dir,
// when the job has it (a container of xrun), for the variables the job's
// environment does not set already.
func cacheEnv(dir string) []string {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	var env []string
	for _, v := range cacheVars {
		if _, set := os.LookupEnv(v.name); !set {
			env = append(env, v.name+"="+filepath.Join(dir, v.dir))
		}
	}
	return env
}

// cacheFacts says what the compile caches in dir, kept in volume, hold as
// the job starts (nil when the job has no cache directory): counted up to
// a bound, so that a huge cache costs no more than a fraction of a second.
func cacheFacts(dir, volume string) *result.Cache {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	c := &result.Cache{Dir: dir, Volume: volume}
	const maxFiles = 200000
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || c.Files >= maxFiles {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				c.Files++
				c.Bytes += fi.Size()
			}
		}
		return nil
	})
	return c
}

// noteReady records what a started worker reports: the kernel clock and
// its launch cost, and the first worker's environment and device.
func (rn *runner) noteReady(rd *harness.Ready) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	// Every implementation's kernel clock adds the same launch cost: the
	// first worker's.
	m := &rn.rec.r.Methodology
	switch {
	case rd.KernelClock != "" && m.KernelClock == "":
		m.KernelClock, m.KernelClockReader, m.LaunchMS = rd.KernelClock, rd.KernelClockReader, rd.LaunchMS
	case rd.KernelClock == "" && rd.KernelClockNote != "" && m.KernelClockNote == "":
		m.KernelClockNote = rd.KernelClockNote
	}
	if rn.gotReady {
		return
	}
	rn.gotReady = true
	env := &rn.rec.r.Env
	env.Python, env.Numpy, env.Torch, env.Triton, env.CUDARuntime = rd.Python, rd.Numpy, rd.Torch, rd.Triton, rd.CUDA
	m.Timer = rd.Timer
	m.FlushBytes = rd.FlushBytes
	m.TimerFloorMS = rd.TimerFloorMS
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
