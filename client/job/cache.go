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
// experiment, version of its code, base image and GPU model, so that two
// bases (another torch, another Triton) or two GPU models never share an
// entry, and a job's caches are its own owner's and code's: another
// user's experiment of the same name, another version of the experiment
// (a pull request's, through scripts/pr.sh), or a job of the same owner
// run as root (submit --root, with capabilities the sandboxed job user
// lacks) cannot plant compiled kernels in the caches the next job of this
// code loads. The code's version is its content hash: a nightly of
// unchanged code finds its caches warm, and an edit starts cold once. Triton,
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
	code := ""
	if p.Code != nil {
		code = p.Code.Hash
	}
	sum := sha256.Sum256([]byte(base + "\x00" + gpuModel + "\x00" + p.Spec.Name + "\x00" + owner + "\x00" + trust + "\x00" + code))
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
	if code != "" {
		labels[contract.LabelCodeHash] = code
	}
	return name, labels
}
