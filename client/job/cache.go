package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
)

// CacheVolumePrefix starts the name of every compile-cache volume.
const CacheVolumePrefix = "xrun-cache-"

// cacheVolume is the compile-cache volume of a job of p, whose image
// engine e built, with a GPU of model gpuModel ("cpu" for a CPU job;
// on a cluster, what its Prepare names, where it is a directory of each node),
// submitted by owner, run as root or not: one per owner, trust level,
// experiment, base image and GPU model, so that two bases (another torch,
// another Triton) or two GPU models never share an entry, and a job's
// caches are its own owner's and experiment's: another user's experiment
// of the same name, another experiment's code, or a job of the same
// owner run as root (submit --root, with capabilities the sandboxed job
// user lacks) cannot plant compiled kernels in them. Triton,
// TorchInductor and torch's extension builds write their entries
// atomically and lock what they build, so two jobs may share one at once.
func cacheVolume(ctx context.Context, e engine.Engine, p *build.Prepared, gpuModel, owner string, root bool) (string, map[string]string) {
	base := ""
	if cfg, err := e.ImageConfig(ctx, p.ImageRef); err == nil {
		base = cfg.Labels[contract.LabelBaseID]
	}
	if base == "" {
		base = p.ImageID
	}
	trust := contract.CacheTrustJobUser
	if root {
		trust = contract.CacheTrustRoot
	}
	sum := sha256.Sum256([]byte(base + "\x00" + gpuModel + "\x00" + p.Spec.Name + "\x00" + owner + "\x00" + trust))
	name := CacheVolumePrefix + p.Spec.Name + "-" + hex.EncodeToString(sum[:])[:12]
	labels := map[string]string{
		contract.LabelCache:      "1",
		contract.LabelExperiment: p.Spec.Name,
		contract.LabelBaseID:     base,
		contract.LabelGPUModel:   gpuModel,
		contract.LabelCacheTrust: trust,
	}
	if owner != "" {
		labels[contract.LabelOwner] = owner
	}
	return name, labels
}
