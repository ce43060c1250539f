package job

import (
	"context"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// baseEngine says that every image is built on base.
type baseEngine struct {
	engine.Engine
	base string
}

func (e baseEngine) ImageConfig(context.Context, string) (engine.ImageConfig, error) {
	return engine.ImageConfig{Labels: map[string]string{contract.LabelBaseID: e.base}}, nil
}

// Two bases or two GPU models (as a cluster's Prepare names them: "cpu",
// "gpu", "gpu_type h100") never share a compile cache.
func TestClusterCacheKey(t *testing.T) {
	prepared := func(gpus *backend.GPUs, gpuType string) *build.Prepared {
		return &build.Prepared{Spec: &spec.Spec{Name: "softmax", Resources: spec.Resources{GPUType: gpuType}}, GPUs: gpus, ImageRef: "xrun/softmax:1"}
	}
	one := &backend.GPUs{Count: 1}
	ctx := context.Background()
	names := map[string]string{}
	for _, k := range []struct{ base, model string }{{"sha256:a", "cpu"}, {"sha256:b", "cpu"}, {"sha256:a", "gpu"}, {"sha256:a", "gpu_type h100"}, {"sha256:a", "gpu_type a100"}} {
		name, labels := cacheVolume(ctx, baseEngine{base: k.base}, prepared(one, ""), k.model, "me", false)
		if prev, ok := names[name]; ok {
			t.Errorf("%v and %s share the cache %s", k, prev, name)
		}
		names[name] = k.base + " " + k.model
		if labels[contract.LabelGPUModel] != k.model || labels[contract.LabelBaseID] != k.base {
			t.Errorf("labels %v", labels)
		}
	}
}

// Two owners, or one owner's sandboxed and root jobs, never share a
// compile cache of one experiment, base and GPU model: another user's
// experiment that picks the same name cannot plant entries in it. The
// volume says whose it is and at which trust level.
func TestCacheKeyPerOwnerAndTrust(t *testing.T) {
	ctx := context.Background()
	p := &build.Prepared{Spec: &spec.Spec{Name: "softmax"}, ImageRef: "xrun/softmax:1"}
	e := baseEngine{base: "sha256:a"}
	names := map[string]string{}
	for _, k := range []struct {
		owner string
		root  bool
		trust string
	}{{"me", false, contract.CacheTrustJobUser}, {"you", false, contract.CacheTrustJobUser}, {"me", true, contract.CacheTrustRoot}} {
		name, labels := cacheVolume(ctx, e, p, "cpu", k.owner, k.root)
		if prev, ok := names[name]; ok {
			t.Errorf("%+v and %s share the cache %s", k, prev, name)
		}
		names[name] = k.owner
		if labels[contract.LabelOwner] != k.owner || labels[contract.LabelCacheTrust] != k.trust {
			t.Errorf("%+v: labels %v", k, labels)
		}
	}
	if a, _ := cacheVolume(ctx, e, p, "cpu", "me", false); a != mustName(cacheVolume(ctx, e, p, "cpu", "me", false)) {
		t.Error("one owner's jobs get two caches")
	}
}

func mustName(name string, _ map[string]string) string { return name }
