//go:build integration

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/e2e/xruntest"
	"github.com/xrun-dev/xrun/result"
)

// cacheOf submits the cache fixture with flags and returns what its
// results say of the compile caches it started with.
func cacheOf(t *testing.T, flags ...string) *result.Cache {
	t.Helper()
	r := submit(t, 5*time.Minute, "cache", append([]string{"--json"}, flags...)...)
	expect(t, r, 0)
	return cacheOfJob(t, r)
}

// cacheOfJob is what the results of job r (a submit with --json) say of
// the compile caches it started with.
func cacheOfJob(t *testing.T, r res) *result.Cache {
	t.Helper()
	return xruntest.Cache(t, x.Results(t, xruntest.JobID(t, r)))
}

// The compile caches of an experiment outlive its jobs in a volume of the
// host, which two jobs share at once, --no-cache-volume leaves out, and
// prune removes.
func TestCompileCacheVolume(t *testing.T) {
	for _, v := range dockerCLIList(t, "volume", "ls", "-q", "--filter", "label=dev.xrun.experiment=e2e-cache") {
		dockerCLI(t, "volume", "rm", v)
	}
	first := cacheOf(t)
	if first.Volume == "" || !strings.HasPrefix(first.Volume, "xrun-cache-e2e-cache-") || first.Files != 0 {
		t.Errorf("first job's cache: %+v, want a new volume of the experiment", first)
	}
	second := cacheOf(t)
	if second.Volume != first.Volume || second.Files == 0 || second.Bytes < 4096 {
		t.Errorf("second job's cache: %+v, want the first's volume with its entry", second)
	}
	// Two jobs at once, on one volume.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = submit(t, 5*time.Minute, "cache").Code
		}()
	}
	wg.Wait()
	if codes[0] != 0 || codes[1] != 0 {
		t.Errorf("two jobs sharing the cache exited %v", codes)
	}
	own := cacheOf(t, "--no-cache-volume")
	if own.Volume != "" || own.Files != 0 {
		t.Errorf("--no-cache-volume: %+v, want the job's own empty caches", own)
	}
	// No container may use the volume for prune to take it: attached jobs
	// removed theirs once their results were in the store.
	if left := jobsOf(t, "e2e-cache"); len(left) != 0 {
		t.Errorf("attached jobs left their containers: %v", left)
		expect(t, x.Run(t, time.Minute, append([]string{"rm", "--keep-record"}, left...)...), 0)
	}
	dry := x.Run(t, time.Minute, "prune", "--caches", "--dry-run")
	expect(t, dry, 0)
	if !strings.Contains(dry.Stdout, "would remove cache volume "+first.Volume) {
		t.Errorf("prune --caches --dry-run:\n%s\n%s", dry.Stdout, dry.Stderr)
	}
	expect(t, x.Run(t, time.Minute, "prune", "--caches"), 0)
	if got := dockerCLIList(t, "volume", "ls", "-q", "--filter", "name="+first.Volume); len(got) != 0 {
		t.Errorf("prune --caches left %v", got)
	}
}

// dockerCLIList runs the docker CLI and returns its output's words.
func dockerCLIList(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(dockerCLI(t, args...))
}

// jobsOf are the ids of the jobs of experiment that have a container.
func jobsOf(t *testing.T, experiment string) []string {
	t.Helper()
	cs, err := eng.List(context.Background(), map[string]string{"dev.xrun.experiment": experiment, "dev.xrun.job": ""}, true)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Labels["dev.xrun.job"])
	}
	return ids
}

// A broken entry in the cache volume is rebuilt, never the job's failure:
// the implementation that fails on it runs again with fresh caches, passes,
// and its entry replaces the broken one, which the next job loads.
func TestCompileCacheBrokenEntry(t *testing.T) {
	const exp = "e2e-cacheentry"
	for _, v := range dockerCLIList(t, "volume", "ls", "-q", "--filter", "label=dev.xrun.experiment="+exp) {
		dockerCLI(t, "volume", "rm", v)
	}
	r := submit(t, 5*time.Minute, "cacheentry", "--json")
	expect(t, r, 0)
	first := cacheOfJob(t, r)
	if first.Volume == "" || len(first.Fresh) != 0 {
		t.Fatalf("first job's cache: %+v, want a new volume", first)
	}
	defer dockerCLI(t, "volume", "rm", first.Volume)
	entry := "/c/triton/vecadd/kernel.json"
	inVolume := func(script string) string {
		return dockerCLI(t, "run", "--rm", "--network", "none", "--entrypoint", "sh", "-v", first.Volume+":/c", Base, "-c", script)
	}
	if got := inVolume("cat " + entry); !strings.Contains(got, `"op": "add"`) {
		t.Fatalf("the first job left %q in the volume, want its kernel", got)
	}
	// Cut short, as a write that was not atomic would leave it.
	inVolume(`printf '{"op": "ad' >` + entry)

	r = submit(t, 5*time.Minute, "cacheentry", "--json")
	expect(t, r, 0)
	second := cacheOfJob(t, r)
	if len(second.Fresh) != 1 || second.Fresh[0].Impl != "cached" || !second.Fresh[0].Passed || second.Fresh[0].Replaced < 1 ||
		!strings.Contains(second.Fresh[0].Error, "JSONDecodeError") {
		t.Errorf("second job's env.cache.fresh: %+v, want cached run again and passed", second.Fresh)
	}
	log := storeFile(t, r, "runner.log")
	for _, want := range []string{"cached: failed during check while it used the compile caches of volume " + first.Volume, "cached: passed with fresh caches, so an entry of the volume's was broken"} {
		if !strings.Contains(log, want) {
			t.Errorf("runner.log lacks %q:\n%s", want, log)
		}
	}
	if got := inVolume("cat " + entry); !strings.Contains(got, `"op": "add"`) {
		t.Errorf("after the second job the volume holds %q, want the rebuilt kernel", got)
	}

	r = submit(t, 5*time.Minute, "cacheentry", "--json")
	expect(t, r, 0)
	third := cacheOfJob(t, r)
	if len(third.Fresh) != 0 || third.Files == 0 {
		t.Errorf("third job's cache: %+v, want the volume's, used as it is", third)
	}
	if w := storeFile(t, r, "logs/cached.log"); !strings.Contains(w, "kernel: loaded from the cache") {
		t.Errorf("the third job did not load the kernel from the volume:\n%s", w)
	}
}

// storeFile is a file of the store's copy of the output directory of
// job r (a submit with --json).
func storeFile(t *testing.T, r res, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(x.Status(t, xruntest.JobID(t, r)).StoreDir, "out", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
