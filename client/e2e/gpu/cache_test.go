//go:build integration

package gpu

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/result"
)

// A Triton kernel's entry broken in the cache volume between two submits:
// the second fails on it (a cut JSON, a cut cubin), runs again with fresh
// caches, passes, and its entry replaces the broken one, which a third
// submit loads as it is.
func TestTritonCacheBrokenEntry(t *testing.T) {
	dir := experiment(t, "gpu-triton-cache", nil)
	submit := func() (*result.Results, string, int) {
		out, stderr, code := run(t, "submit", "--json", "--gpus", "1", dir)
		if code != 0 {
			return nil, lastLines(stderr, 40), code
		}
		return jobResults(t, xruntest.JobID(t, xruntest.Result{Code: code, Stdout: out, Stderr: stderr})), "", 0
	}
	r, log, code := submit()
	if code != 0 {
		t.Fatalf("first submit: exit %d\n%s", code, log)
	}
	if r.Env.Cache == nil || r.Env.Cache.Volume == "" {
		t.Fatalf("first submit's env.cache %+v, want the cache volume", r.Env.Cache)
	}
	vol := r.Env.Cache.Volume
	defer eng.RemoveVolume(context.Background(), vol)
	// Every metadata file and kernel image Triton keeps, cut to 10 bytes.
	n := inVolume(t, vol,
		`find /c/triton -type f \( -name '*.json' -o -name '*.cubin' \) -exec truncate -s 10 {} + -print | wc -l`)
	if k, _ := strconv.Atoi(strings.TrimSpace(n)); k == 0 {
		t.Fatalf("no Triton entry in volume %s to break", vol)
	}

	r, log, code = submit()
	if code != 0 {
		t.Fatalf("second submit, on the broken entry: exit %d\n%s", code, log)
	}
	if ir := r.Cases[0].Results["triton_add"]; ir == nil || ir.Timing == nil {
		t.Errorf("triton_add was not timed: %+v", ir)
	}
	if f := r.Env.Cache.Fresh; len(f) != 1 || f[0].Impl != "triton_add" || !f[0].Passed || f[0].Replaced == 0 {
		t.Errorf("second submit's env.cache.fresh %+v, want triton_add run again with fresh caches and passed", f)
	}

	r, log, code = submit()
	if code != 0 {
		t.Fatalf("third submit: exit %d\n%s", code, log)
	}
	if len(r.Env.Cache.Fresh) != 0 || r.Env.Cache.Files == 0 {
		t.Errorf("third submit's env.cache %+v, want the volume's entries, used as they are", r.Env.Cache)
	}
}

// inVolume runs script with sh in a container of the CUDA base on the GPU
// host, with volume vol at /c and no network, and returns its output (a
// GPU machine made a Docker host by scripts/gpu-host has no docker CLI:
// the engine API does it).
func inVolume(t *testing.T, vol, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := eng.Create(ctx, engine.ContainerSpec{Image: cudaBase, Entrypoint: []string{"sh", "-c"}, Cmd: []string{script},
		NetworkDisabled: true, Labels: map[string]string{"dev.xrun.test": "gpu-e2e"}, Mounts: []engine.Mount{{Volume: vol, Target: "/c"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Remove(context.Background(), id, true)
	wait := eng.Wait(ctx, id, true)
	if err := eng.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	res := <-wait
	var out bytes.Buffer
	if err := eng.Logs(ctx, id, engine.LogOptions{Tail: "all"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("sh -c %q in %s: exit %d, %v\n%s", script, cudaBase, res.ExitCode, res.Err, out.String())
	}
	return out.String()
}

// The second submit of a GPU experiment runs in the standby the first
// left: torch and Triton imported before it came, its kernels correct and
// timed, and prune removes the standby the second left.
func TestStandbyOnGPU(t *testing.T) {
	dir := experiment(t, "gpu-triton-cache", nil)
	on := []string{"XRUN_NO_STANDBY=false"}
	submit := func() (*result.Results, xruntest.Result) {
		r := x.RunEnv(t, 8*time.Minute, on, "submit", "--json", "--gpus", "1", dir)
		if r.Code != 0 {
			t.Fatalf("submit: exit %d\n%s", r.Code, lastLines(r.Stderr, 40))
		}
		return jobResults(t, xruntest.JobID(t, r)), r
	}
	submit()
	r, second := submit()
	if !strings.Contains(second.Stderr, "standby: waited") || !strings.Contains(second.Stderr, "torch, triton") {
		t.Errorf("the second submit did not run in a standby with torch and triton imported:\n%s", lastLines(second.Stderr, 40))
	}
	if ir := r.Cases[0].Results["triton_add"]; ir == nil || ir.Timing == nil || ir.Correctness == nil || !ir.Correctness.Passed {
		t.Errorf("triton_add in the standby: %+v", ir)
	}
	p := x.RunEnv(t, time.Minute, on, "prune")
	if p.Code != 0 || !regexp.MustCompile(`removed [1-9][0-9]* standby container`).MatchString(p.Stderr) {
		t.Errorf("prune: exit %d\n%s", p.Code, p.Stderr)
	}
}
