package run

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/xrun-dev/xrun/result"
	"github.com/xrun-dev/xrun/runner/harness"
)

func TestCacheSuspect(t *testing.T) {
	for _, c := range []struct {
		op   string
		err  error
		want bool
	}{
		{"start", &harness.Error{Kind: harness.KindImport}, true},
		{"check", &harness.Error{Kind: harness.KindException}, true},
		{"check", &harness.Error{Kind: harness.KindCrash}, true},
		{"check", &harness.Error{Kind: harness.KindCUDA}, true},
		{"check", &harness.Error{Kind: harness.KindProtocol}, true},
		{"start", &harness.Error{Kind: harness.KindTimeout}, true},
		{"check", &harness.Error{Kind: harness.KindTimeout}, false},
		{"check", &harness.Error{Kind: harness.KindOOM}, false},
		{"check", errors.New("not the harness's"), false},
		{"check", context.Canceled, false},
	} {
		if got := cacheSuspect(c.op, c.err); got != c.want {
			t.Errorf("cacheSuspect(%s, %v) = %v, want %v", c.op, c.err, got, c.want)
		}
	}
}

func TestFreshEnv(t *testing.T) {
	base := []string{"HOME=/xrun/home", "TRITON_CACHE_DIR=/xrun/cache/triton", "TORCH_EXTENSIONS_DIR=/mine/ext", "CUDA_CACHE_PATH=/xrun/cache/nv/"}
	want := []string{"HOME=/xrun/home", "TRITON_CACHE_DIR=/xrun/home/f/triton", "TORCH_EXTENSIONS_DIR=/mine/ext", "CUDA_CACHE_PATH=/xrun/home/f/nv"}
	if got := freshEnv(base, "/xrun/cache", "/xrun/home/f"); !reflect.DeepEqual(got, want) {
		t.Errorf("freshEnv:\n got %q\nwant %q", got, want)
	}
	if got := cacheVarsIn(base, "/xrun/cache"); !reflect.DeepEqual(got, []string{"TRITON_CACHE_DIR", "CUDA_CACHE_PATH"}) {
		t.Errorf("cacheVarsIn: %q", got)
	}
}

// Only a volume's caches, filled by other jobs, are distrusted: the job's
// own are new, and a job whose variables point elsewhere has none of ours.
func TestFreshCachesOnlyForAVolume(t *testing.T) {
	env := []string{"HOME=/h", "TRITON_CACHE_DIR=/xrun/cache/triton"}
	for _, c := range []struct {
		cache *result.Cache
		env   []string
		want  string
	}{
		{&result.Cache{Dir: "/xrun/cache", Volume: "v"}, env, "/xrun/cache"},
		{&result.Cache{Dir: "/xrun/cache"}, env, ""},
		{nil, env, ""},
		{&result.Cache{Dir: "/xrun/cache", Volume: "v"}, []string{"TRITON_CACHE_DIR=/elsewhere"}, ""},
	} {
		f := newFreshCaches(c.cache, c.env, new(sync.Mutex), t.Logf)
		if f.shared != c.want {
			t.Errorf("%+v, %q: shared %q, want %q", c.cache, c.env, f.shared, c.want)
		}
		im := &impl{name: "a"}
		if f.again(context.Background(), im, "check", &harness.Error{Kind: harness.KindException}) != (c.want != "") {
			t.Errorf("%+v: again disagrees with shared %q", c.cache, f.shared)
		}
	}
	f := newFreshCaches(&result.Cache{Dir: "/xrun/cache", Volume: "v"}, env, new(sync.Mutex), t.Logf)
	im := &impl{name: "a/b"}
	if !f.again(context.Background(), im, "check", &harness.Error{Kind: harness.KindException, Message: "x\ny"}) || im.fresh != "/h/.xrun-fresh-cache/a_b" {
		t.Fatalf("first failure: fresh %q", im.fresh)
	}
	if f.again(context.Background(), im, "check", &harness.Error{Kind: harness.KindException}) {
		t.Error("a second failure ran again")
	}
	if len(f.cache.Fresh) != 1 || f.cache.Fresh[0].Impl != "a/b" || strings.Contains(f.cache.Fresh[0].Error, "\n") {
		t.Errorf("recorded %+v", f.cache.Fresh)
	}
}

// A broken entry in the volume's caches: the implementation that loads it
// runs again with fresh caches, passes, and its entry replaces the broken
// one; one with a bug of its own fails with its own error after its run
// again; without a volume nothing runs again.
func TestBrokenCacheEntryIsRebuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	noGPU(t)
	py := python(t)
	for _, v := range cacheVars {
		t.Setenv(v.name, "")
		os.Unsetenv(v.name)
	}
	for _, volume := range []string{"xrun-cache-test", ""} {
		t.Run("volume="+volume, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			cache := t.TempDir()
			entry := filepath.Join(cache, "triton", "vecadd", "kernel.json")
			if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entry, []byte(`{"op": "ad`), 0o644); err != nil {
				t.Fatal(err)
			}
			ro := runFixture(t, context.Background(), Options{ExperimentDir: "testdata/cache-entry", Python: py, CacheDir: cache, CacheVolume: volume})
			r := readResults(t, ro.out)
			cached, broken := implOf(t, r, 0, "cached"), implOf(t, r, 0, "broken")
			if !strings.Contains(broken.Error, "JSONDecodeError") && !strings.Contains(broken.Error, "its own bug") {
				t.Errorf("broken: %+v", broken)
			}
			if volume == "" {
				if cached.Status != result.ImplError || !strings.Contains(cached.Error, "JSONDecodeError") || len(r.Env.Cache.Fresh) != 0 {
					t.Errorf("without a volume: cached %+v, fresh %+v", cached, r.Env.Cache.Fresh)
				}
				return
			}
			for ci := range r.Cases {
				if ir := implOf(t, r, ci, "cached"); ir.Status != result.ImplOK || ir.Timing == nil {
					t.Errorf("case %d: cached %+v", ci, ir)
				}
			}
			if broken.Status != result.ImplError || !strings.Contains(broken.Error, "ValueError: broken: its own bug") {
				t.Errorf("broken: %+v, want its own error", broken)
			}
			got := map[string]result.FreshCache{}
			for _, f := range r.Env.Cache.Fresh {
				got[f.Impl] = f
			}
			if f := got["cached"]; len(got) != 2 || !f.Passed || f.Replaced != 1 || !strings.Contains(f.Error, "JSONDecodeError") {
				t.Errorf("env.cache.fresh: %+v", r.Env.Cache.Fresh)
			}
			if f := got["broken"]; f.Passed || !strings.Contains(f.Error, "JSONDecodeError") {
				t.Errorf("broken's run again: %+v", f)
			}
			b, err := os.ReadFile(entry)
			var meta map[string]any
			if err != nil || json.Unmarshal(b, &meta) != nil || meta["op"] != "add" {
				t.Errorf("the volume's entry after the run: %q, %v", b, err)
			}
			for _, want := range []string{"cached: failed during check while it used the compile caches of volume xrun-cache-test", "cached: passed with fresh caches, so an entry of the volume's was broken: 1 fresh files replaced the volume's", "broken: failed again with fresh caches"} {
				if !strings.Contains(ro.log, want) {
					t.Errorf("log lacks %q", want)
				}
			}
		})
	}
}
