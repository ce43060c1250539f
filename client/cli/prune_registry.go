package cli

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/registry"
	"github.com/xrun-dev/xrun/runner/contract"
)

// runPruneRegistry is prune --k8s: it deletes the job images in the
// cluster's registry that no Job of the cluster names and that were pushed
// more than --older-than ago. A manifest goes only when every tag that
// points at it may go.
func runPruneRegistry(ctx context.Context, a *App, o pruneOptions) error {
	kb, err := a.Backends().Kube(ctx, o.host.Kube)
	if err != nil {
		return err
	}
	images, err := kb.ImagesInUse(ctx)
	if err != nil {
		return err
	}
	// Compared without the registry's host: the cluster may pull from
	// registry.lab:5000 what this client calls 10.0.0.5:5000.
	used := map[string]bool{}
	knownRepos := map[string]bool{}
	for ref := range images {
		used[registry.WithoutHost(ref)] = true
		knownRepos[registry.Repository(ref)] = true
	}
	// The repositories this store's cluster jobs were pushed to, for a
	// registry that does not list its repositories.
	if st, err := a.Store(); err == nil {
		if list, err := st.List(); err == nil {
			for _, j := range list {
				if kube.IsRef(j.Host) && j.ImageRef != "" {
					knownRepos[registry.Repository(j.ImageRef)] = true
				}
			}
		}
	}
	reg, err := registry.New(o.registry)
	if err != nil {
		return usageError("--registry: %v", err)
	}
	known := make([]string, 0, len(knownRepos))
	for r := range knownRepos {
		known = append(known, r)
	}
	sort.Strings(known)
	ims, note, err := reg.Images(ctx, known)
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintf(a.Err, "note: %s\n", note)
	}
	plan := planRegistryPrune(ims, used, o.labels, time.Now().Add(-o.olderThan))
	rep := &pruneReport{Where: reg.String(), DryRun: o.dryRun, InUse: plan.inUse, Young: plan.young, Shared: plan.shared,
		Removed: []pruned{}, inUseWords: "named by Jobs of the cluster", madeWord: "pushed",
		freedNote: "once its garbage collection frees the layers no other image has"}
	for _, im := range plan.remove {
		if !o.dryRun {
			if err := reg.Delete(ctx, im.Ref, im.Digest); err != nil {
				rep.fail(err)
				continue
			}
		}
		a.prunedOne(rep, pruned{Ref: im.Ref, ID: im.Digest, Experiment: im.Labels[contract.LabelExperiment], Bytes: im.Bytes, Created: im.Created}, o)
	}
	return a.finishPrune(rep, o)
}

// registryPrune is what prune --k8s removes and why it keeps the rest.
type registryPrune struct {
	remove               []registry.Image
	inUse, young, shared int
}

// planRegistryPrune picks the images to delete: those with labels, that
// no Job names (used holds refs without their host) and pushed before
// cutoff, whose manifest no kept tag shares (deleting a manifest deletes
// every tag of it).
func planRegistryPrune(ims []registry.Image, used map[string]bool, labels map[string]string, cutoff time.Time) registryPrune {
	var p registryPrune
	keep := map[string]bool{} // digests with a tag that stays
	var candidates []registry.Image
	for _, im := range ims {
		switch {
		case !hasLabels(im.Labels, labels):
			keep[im.Digest] = true
		case used[registry.WithoutHost(im.Ref)]:
			keep[im.Digest] = true
			p.inUse++
		case im.Created.After(cutoff):
			keep[im.Digest] = true
			p.young++
		default:
			candidates = append(candidates, im)
		}
	}
	for _, im := range candidates {
		if keep[im.Digest] {
			p.shared++
		} else {
			p.remove = append(p.remove, im)
		}
	}
	return p
}

// hasLabels reports whether labels has every key of want, with its value
// where want gives one.
func hasLabels(labels, want map[string]string) bool {
	for k, v := range want {
		got, ok := labels[k]
		if !ok || v != "" && got != v {
			return false
		}
	}
	return true
}
