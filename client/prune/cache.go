package prune

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
)

// Cache is a compile-cache volume that a prune removed (or would).
type Cache struct {
	Volume     string `json:"volume"`
	Experiment string `json:"experiment,omitempty"`
	GPUModel   string `json:"gpu_model,omitempty"`
	// Bytes is its size (-1: the daemon did not say).
	Bytes int64 `json:"bytes"`
	// Why is "base gone" (its base image is no longer on the host: no job
	// can use it again) or "asked" (--caches).
	Why string `json:"why"`
}

// caches removes the compile-cache volumes of o.Owner that no container
// uses and whose base image is gone (no job can use them again), or, with
// o.Caches, every one of o.Owner's that no container uses.
func caches(ctx context.Context, e engine.Engine, r *Report, o Options) {
	vols, err := e.Volumes(ctx, map[string]string{contract.LabelCache: ""})
	if err != nil {
		r.fail(err)
		return
	}
	sort.Slice(vols, func(i, j int) bool { return vols[i].Name < vols[j].Name })
	for _, v := range vols {
		if !o.mine(v.Labels) {
			r.CachesOthers++
			continue
		}
		if v.Containers > 0 {
			r.CachesInUse++
			continue
		}
		why := "asked"
		if !o.Caches {
			if base := v.Labels[contract.LabelBaseID]; base == "" {
				r.CachesKept++
				continue
			} else if ok, err := e.ImageExists(ctx, base); err != nil || ok {
				r.CachesKept++
				continue
			}
			why = "base gone"
		}
		p := Cache{Volume: v.Name, Experiment: v.Labels[contract.LabelExperiment], GPUModel: v.Labels[contract.LabelGPUModel], Bytes: v.Size, Why: why}
		if !o.DryRun {
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
		if o.Out == nil {
			continue
		}
		size := "size unknown"
		if p.Bytes >= 0 {
			size = table.Bytes(p.Bytes)
		}
		verb := "removed"
		if o.DryRun {
			verb = "would remove"
		}
		fmt.Fprintf(o.Out, "%s cache volume %s (%s, %s, %s; %s)\n", verb, p.Volume, p.Experiment, p.GPUModel, size, p.Why)
	}
}

// cacheSize says how much the removed caches held, as far as the daemon
// reported their sizes (daemons before API 1.42 do not, cheaply).
func (r *Report) cacheSize() string {
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
		return "at least " + table.Bytes(r.CacheBytes)
	}
	return table.Bytes(r.CacheBytes)
}
