package prune

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// BadRegistryError is Registry's error for a registry address it
// cannot use.
type BadRegistryError struct{ Err error }

func (e *BadRegistryError) Error() string { return e.Err.Error() }
func (e *BadRegistryError) Unwrap() error { return e.Err }

// Cluster is the cluster whose registry Registry prunes
// (client/backend/kube's Backend).
type Cluster interface {
	// ImagesInUse are the images its Jobs name.
	ImagesInUse(ctx context.Context) (map[string]bool, error)
	// Ran reports whether job j's record is of a job of such a cluster.
	Ran(j *store.Job) bool
}

// RegistryImages deletes the job images in the registry at addr
// (HOST[:PORT][/PATH]) that no Job of kb's cluster names and that were
// pushed more than o.OlderThan ago. A manifest goes only when every tag
// that points at it may go. known are the job records of this client,
// whose cluster jobs name repositories a registry that does not list
// its repositories would not show; note gets what the registry could
// not tell.
func RegistryImages(ctx context.Context, kb Cluster, addr string, known []*store.Job, o Options, note io.Writer) (*Report, error) {
	images, err := kb.ImagesInUse(ctx)
	if err != nil {
		return nil, err
	}
	// Compared without the registry's host: the cluster may pull from
	// prune.lab:5000 what this client calls 10.0.0.5:5000.
	used := map[string]bool{}
	knownRepos := map[string]bool{}
	for ref := range images {
		used[WithoutHost(ref)] = true
		knownRepos[Repository(ref)] = true
	}
	for _, j := range known {
		if kb.Ran(j) && j.ImageRef != "" {
			knownRepos[Repository(j.ImageRef)] = true
		}
	}
	reg, err := NewRegistry(addr)
	if err != nil {
		return nil, &BadRegistryError{Err: err}
	}
	repos := make([]string, 0, len(knownRepos))
	for r := range knownRepos {
		repos = append(repos, r)
	}
	sort.Strings(repos)
	ims, msg, err := reg.Images(ctx, repos)
	if err != nil {
		return nil, err
	}
	if msg != "" {
		fmt.Fprintf(note, "note: %s\n", msg)
	}
	labels := map[string]string{}
	for k, v := range o.Labels {
		labels[k] = v
	}
	if o.Owner != "" {
		labels[contract.LabelOwner] = o.Owner
	}
	plan := planRegistryPrune(ims, used, labels, time.Now().Add(-o.OlderThan))
	rep := &Report{Where: reg.String(), DryRun: o.DryRun, InUse: plan.inUse, Young: plan.young, Shared: plan.shared,
		Removed: []Removed{}, inUseWords: "named by Jobs of the cluster", madeWord: "pushed",
		freedNote: "once its garbage collection frees the layers no other image has"}
	for _, im := range plan.remove {
		if !o.DryRun {
			if err := reg.Delete(ctx, im.Ref, im.Digest); err != nil {
				rep.fail(err)
				continue
			}
		}
		rep.removed(Removed{Ref: im.Ref, ID: im.Digest, Experiment: im.Labels[contract.LabelExperiment], Bytes: im.Bytes, Created: im.Created}, o)
	}
	return rep, nil
}

// registryPrune is what prune --k8s removes and why it keeps the rest.
type registryPrune struct {
	remove               []Image
	inUse, young, shared int
}

// planRegistryPrune picks the images to delete: xrun's job images (a
// contract.LabelExperiment) with labels, that
// no Job names (used holds refs without their host) and pushed before
// cutoff, whose manifest no kept tag shares (deleting a manifest deletes
// every tag of it).
func planRegistryPrune(ims []Image, used map[string]bool, labels map[string]string, cutoff time.Time) registryPrune {
	var p registryPrune
	keep := map[string]bool{} // digests with a tag that stays
	var candidates []Image
	for _, im := range ims {
		switch {
		case im.Labels[contract.LabelExperiment] == "":
			// Not a job image of xrun's (the cluster's own pause image
			// shares the xrun/ prefix): never touched, whoever prunes.
			keep[im.Digest] = true
		case !hasLabels(im.Labels, labels):
			keep[im.Digest] = true
		case used[WithoutHost(im.Ref)]:
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
