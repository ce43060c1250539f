package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
	"github.com/xrun-dev/xrun/runner/sandbox"
)

// freshCaches is the run's answer to a broken entry in the compile caches
// of a volume that other jobs filled (runner/harness/PROTOCOL.md, "Compile
// caches"): an implementation that fails while it uses them runs again,
// once, with fresh empty caches of its own. When it then gets past where
// it failed, its fresh entries replace the volume's; when it fails again,
// the failure is its own and the results hold it.
type freshCaches struct {
	// shared is the volume's caches; "" when the job has none that other
	// jobs wrote (no volume, or no cache directory).
	shared string
	// root holds the fresh caches, one directory per implementation, in
	// the job's home.
	root string
	// cache is env.cache, where each run again is recorded; mu guards it
	// (the runner's, which guards the results).
	cache *result.Cache
	mu    *sync.Mutex
	logf  func(format string, args ...any)
	// copyBack writes the entries of the fresh caches in src into the
	// volume's in dst and says how many files it wrote.
	copyBack func(ctx context.Context, src, dst string) (int, error)
}

// newFreshCaches is the answer of a run whose caches are cache (nil: none),
// for workers whose environment is env.
func newFreshCaches(cache *result.Cache, env []string, mu *sync.Mutex, logf func(string, ...any)) *freshCaches {
	f := &freshCaches{cache: cache, mu: mu, logf: logf}
	if cache != nil && cache.Volume != "" && len(cacheVarsIn(env, cache.Dir)) > 0 {
		f.shared = cache.Dir
	}
	home := envValue(env, "HOME")
	if home == "" {
		home = "/tmp"
	}
	f.root = filepath.Join(home, ".xrun-fresh-cache")
	return f
}

// cacheSuspect says whether a failure of an implementation, met in op
// ("start": importing it and its code step, "check": its first calls),
// can come from a broken compile-cache entry: an exception (a truncated
// extension's ImportError, a cut JSON's JSONDecodeError), a crash or a
// CUDA error (a bad kernel image), a worker that stopped answering sense.
// A wrong result, an out-of-memory and a timeout in a call are the
// implementation's; a timeout while it starts can be a build waiting on
// a lock that a killed build left.
func cacheSuspect(op string, err error) bool {
	var he *harness.Error
	if !errors.As(err, &he) {
		return false
	}
	switch he.Kind {
	case harness.KindImport, harness.KindException, harness.KindCrash, harness.KindCUDA, harness.KindProtocol:
		return true
	case harness.KindTimeout:
		return op == "start"
	}
	return false
}

// again decides whether im, which failed in op with err, runs again with
// fresh caches: the volume's were in use, it has not run with fresh ones
// yet, and err can come from a cache. If so its worker is gone, the log
// and the results say why, and its next worker gets the fresh caches.
func (f *freshCaches) again(ctx context.Context, im *impl, op string, err error) bool {
	if f == nil || f.shared == "" || im.fresh != "" || ctx.Err() != nil || !cacheSuspect(op, err) {
		return false
	}
	im.fresh = filepath.Join(f.root, safeName(im.name))
	if im.w != nil {
		im.w.Kill()
		im.w.Close(time.Second)
		im.w = nil
	}
	im.initErr, im.startErr = nil, nil
	first, _, _ := strings.Cut(err.Error(), "\n")
	f.mu.Lock()
	im.freshIdx = len(f.cache.Fresh)
	f.cache.Fresh = append(f.cache.Fresh, result.FreshCache{Impl: im.name, Error: errorText(first)})
	f.mu.Unlock()
	f.logf("%s: failed during %s while it used the compile caches of volume %s (%s): running it again with fresh caches of its own in %s",
		im.name, op, f.cache.Volume, first, im.fresh)
	return true
}

// done records how im's run with fresh caches went: err is its failure,
// nil when it got past where it failed with the volume's caches, whose
// broken entries its fresh ones then replace.
func (f *freshCaches) done(ctx context.Context, im *impl, err error) {
	if err != nil {
		f.logf("%s: failed again with fresh caches: the failure is its own, not the cache's", im.name)
		return
	}
	n, cerr := 0, error(nil)
	if f.copyBack != nil {
		n, cerr = f.copyBack(ctx, im.fresh, f.shared)
	}
	f.mu.Lock()
	fc := &f.cache.Fresh[im.freshIdx]
	fc.Passed, fc.Replaced = true, n
	f.mu.Unlock()
	switch {
	case f.copyBack == nil:
		f.logf("%s: passed with fresh caches, so an entry of the volume's was broken; its fresh entries stay its own (no Python to copy them)", im.name)
	case cerr != nil:
		f.logf("%s: passed with fresh caches, so an entry of the volume's was broken; writing %d fresh files into the volume then failed: %v", im.name, n, cerr)
	default:
		f.logf("%s: passed with fresh caches, so an entry of the volume's was broken: %d fresh files replaced the volume's", im.name, n)
	}
}

// freshEnv is the workers' environment base with the compile caches that
// point into the volume's pointing into fresh instead.
func freshEnv(base []string, shared, fresh string) []string {
	env := make([]string, 0, len(base))
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		for _, c := range cacheVars {
			if k == c.name && filepath.Clean(v) == filepath.Join(shared, c.dir) {
				kv = k + "=" + filepath.Join(fresh, c.dir)
			}
		}
		env = append(env, kv)
	}
	return env
}

// cacheVarsIn are the compile-cache variables of env that point into dir.
func cacheVarsIn(env []string, dir string) []string {
	var names []string
	for _, c := range cacheVars {
		if v, ok := lookupEnv(env, c.name); ok && filepath.Clean(v) == filepath.Join(dir, c.dir) {
			names = append(names, c.name)
		}
	}
	return names
}

func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, _ := strings.Cut(env[i], "="); k == name {
			return v, true
		}
	}
	return "", false
}

func envValue(env []string, name string) string {
	v, _ := lookupEnv(env, name)
	return v
}

// copyCaches is freshCaches.copyBack for a Python run: the harness copies
// src into dst (harness.py --cache-copy) as the user the experiment runs
// as, who owns the volume's caches.
func copyCaches(ctx context.Context, py, script, dir string, env []string, as *sandbox.User, src, dst string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, "--cache-copy", src, dst)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	as.Apply(cmd.SysProcAttr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct {
		Copied int      `json:"copied"`
		Failed []string `json:"failed"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil && err == nil {
		err = fmt.Errorf("read its answer %q: %w", lines[len(lines)-1], jerr)
	}
	if err != nil {
		return res.Copied, fmt.Errorf("%w: %s", err, lastBytes(strings.TrimSpace(stderr.String()), 400))
	}
	if len(res.Failed) > 0 {
		return res.Copied, fmt.Errorf("%d files not written (%s)", len(res.Failed), strings.Join(res.Failed[:min(3, len(res.Failed))], "; "))
	}
	return res.Copied, nil
}

// autotuneCache says where the run's autotuned Triton kernels get their
// configs (result.Methodology.AutotuneCache) and, for a retune, forgets
// the ones stored in the workers' Triton cache first: as the worker user,
// who owns the cache's files (harness.py --forget-autotune).
func (rn *runner) autotuneCache(ctx context.Context, py, script string, p *pool) string {
	if v := envValue(p.env, "TRITON_CACHE_AUTOTUNING"); v == "0" || strings.EqualFold(v, "false") {
		return result.AutotuneOff
	}
	if !rn.o.Retune && !rn.s.Benchmark.Method.Retune {
		return result.AutotuneReuse
	}
	dir := envValue(p.env, "TRITON_CACHE_DIR")
	if dir == "" {
		dir = filepath.Join(envValue(p.env, "HOME"), ".triton", "cache")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, "--forget-autotune", dir)
	cmd.Dir, cmd.Env = p.dir, p.env
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	p.as.Apply(cmd.SysProcAttr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res struct {
		Removed int      `json:"removed"`
		Failed  []string `json:"failed"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil {
		err = json.Unmarshal([]byte(lines[len(lines)-1]), &res)
	}
	switch {
	case err != nil:
		rn.logf("retune: forgetting the stored autotune results in %s failed (%v: %s); a kernel whose result stays is not tuned afresh", dir, err, lastBytes(strings.TrimSpace(stderr.String()), 400))
	case len(res.Failed) > 0:
		rn.logf("retune: forgot %d stored autotune results in %s; %d could not be removed (%s)", res.Removed, dir, len(res.Failed), strings.Join(res.Failed[:min(3, len(res.Failed))], "; "))
	default:
		rn.logf("retune: forgot %d stored autotune results in %s: every autotuned kernel is timed afresh", res.Removed, dir)
	}
	return result.AutotuneRetune
}
