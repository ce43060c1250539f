package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/runner/contract"
)

// prunedCache is a compile-cache volume that prune removed (or would).
type prunedCache struct {
	Volume     string `json:"volume"`
	Experiment string `json:"experiment,omitempty"`
	GPUModel   string `json:"gpu_model,omitempty"`
	// Bytes is its size (-1: the daemon did not say).
	Bytes int64 `json:"bytes"`
	// Why is "base gone" (its base image is no longer on the host: no job
	// can use it again) or "asked" (--caches).
	Why string `json:"why"`
}

// pruneCaches removes the compile-cache volumes that no container uses
// and whose base image is gone (no job can use them again), or, with
// --caches, every one that no container uses.
func (a *App) pruneCaches(ctx context.Context, e engine.Engine, r *pruneReport, o pruneOptions) {
	vols, err := e.Volumes(ctx, map[string]string{contract.LabelCache: ""})
	if err != nil {
		r.fail(err)
		return
	}
	sort.Slice(vols, func(i, j int) bool { return vols[i].Name < vols[j].Name })
	for _, v := range vols {
		if v.Containers > 0 {
			r.CachesInUse++
			continue
		}
		why := "asked"
		if !o.caches {
			if base := v.Labels[contract.LabelBaseID]; base == "" {
				r.CachesKept++
				continue
			} else if ok, err := e.ImageExists(ctx, base); err != nil || ok {
				r.CachesKept++
				continue
			}
			why = "base gone"
		}
		p := prunedCache{Volume: v.Name, Experiment: v.Labels[contract.LabelExperiment], GPUModel: v.Labels[contract.LabelGPUModel], Bytes: v.Size, Why: why}
		if !o.dryRun {
			if err := e.RemoveVolume(ctx, v.Name); errors.Is(err, engine.ErrNotFound) {
				continue
			} else if err != nil {
				r.fail(err)
				continue
			}
		}
		r.Caches = append(r.Caches, p)
		if p.Bytes > 0 {
			r.CacheBytes += p.Bytes
		}
		if o.json {
			continue
		}
		size := "size unknown"
		if p.Bytes >= 0 {
			size = fmtBytes(p.Bytes)
		}
		verb := "removed"
		if o.dryRun {
			verb = "would remove"
		}
		fmt.Fprintf(a.Out, "%s cache volume %s (%s, %s, %s; %s)\n", verb, p.Volume, p.Experiment, p.GPUModel, size, p.Why)
	}
}

// cacheSize says how much the removed caches held, as far as the daemon
// reported their sizes (daemons before API 1.42 do not, cheaply).
func (r *pruneReport) cacheSize() string {
	unknown := 0
	for _, c := range r.Caches {
		if c.Bytes < 0 {
			unknown++
		}
	}
	switch {
	case unknown == len(r.Caches):
		return "size unknown"
	case unknown > 0:
		return "at least " + fmtBytes(r.CacheBytes)
	}
	return fmtBytes(r.CacheBytes)
}
