//go:build integration

package gpu

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/runner/result"
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
	defer hostDocker(t, "volume", "rm", vol)
	// Every metadata file and kernel image Triton keeps, cut to 10 bytes.
	n := hostDocker(t, "run", "--rm", "--network", "none", "--entrypoint", "sh", "-v", vol+":/c", cudaBase, "-c",
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

// hostDocker runs the docker CLI against the GPU host and returns its
// output.
func hostDocker(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, b)
	}
	return string(b)
}
