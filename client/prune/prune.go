// Package prune removes what xrun's jobs leave behind once nothing uses
// it: the job images on a Docker host, the compile-cache volumes, and the
// job images in a Kubernetes cluster's registry.
package prune

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/runner/contract"
)

// Options say what a prune removes.
type Options struct {
	// DryRun removes nothing and reports what it would remove.
	DryRun bool
	// OlderThan keeps what was made (built, pushed) more recently.
	OlderThan time.Duration
	// Labels keeps images without these labels (a key with "" matches
	// any value).
	Labels map[string]string
	// Caches removes every compile-cache volume that no container uses,
	// not only those whose base image is gone.
	Caches bool
	// Out gets a line for each removal as it happens; nil prints none
	// (the report goes out as JSON).
	Out io.Writer
}

// Host removes the job images (labelled dev.xrun.experiment, with
// o.Labels) on e that no container uses, running or stopped, built more
// than o.OlderThan ago, and the compile-cache volumes (Caches). What could
// not be removed is in the report's errors; err is for a host that could
// not be read.
func Host(ctx context.Context, e engine.Engine, o Options) (*Report, error) {
	filter := map[string]string{contract.LabelExperiment: ""}
	for k, v := range o.Labels {
		filter[k] = v
	}
	// Standbys hold images and cache volumes for a next submit that a
	// prune says is not coming soon: they go first.
	standbys, err := dockerhost.New(e).RemoveStandbys(ctx, o.DryRun)
	if err != nil {
		return nil, err
	}
	ims, err := e.Images(ctx, filter)
	if err != nil {
		return nil, err
	}
	// Any container counts, not only xrun's: an image someone runs by
	// hand is in use too.
	cs, err := e.List(ctx, nil, true)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, c := range cs {
		used[c.ImageID] = true
	}
	// The classic builder leaves each build step as an image: those go
	// with the image built on them (RemoveImage prunes untagged parents).
	parents := map[string]bool{}
	for _, im := range ims {
		parents[im.Parent] = true
	}
	cutoff := time.Now().Add(-o.OlderThan)
	var remove []engine.Image
	inUse, young := 0, 0
	for _, im := range ims {
		switch {
		case parents[im.ID] && len(tags(im)) == 0:
		case used[im.ID]:
			inUse++
		case im.Created.After(cutoff):
			young++
		default:
			remove = append(remove, im)
		}
	}
	sort.SliceStable(remove, func(i, j int) bool { return remove[i].Created.Before(remove[j].Created) })
	rep := &Report{Where: e.Host(), DryRun: o.DryRun, InUse: inUse, Young: young, Removed: []Removed{}, Standbys: standbys,
		inUseWords: "in use by containers", madeWord: "built", freedNote: "layers shared with kept images stay"}
	// An image that another is built on (a Kubernetes job's code image
	// is built on its job image; a user may build on one) goes after it:
	// a second pass takes those whose children the first removed, and
	// keeps those whose children stay.
	var bases []engine.Image
	for pass := 0; pass < 2; pass++ {
		for _, im := range remove {
			name := strings.Join(tags(im), ", ")
			if name == "" {
				name = "untagged " + shortID(im.ID)
			}
			p := Removed{Ref: name, ID: im.ID, Experiment: im.Labels[contract.LabelExperiment], Bytes: im.Size, Created: im.Created}
			if !o.DryRun {
				err := e.RemoveImage(ctx, im.ID)
				switch {
				case errors.Is(err, engine.ErrNotFound):
					continue // gone since it was listed
				case errors.Is(err, engine.ErrImageHasChildren) && pass == 0:
					bases = append(bases, im)
					continue
				case errors.Is(err, engine.ErrImageHasChildren):
					rep.Bases++
					continue
				case err != nil:
					rep.fail(err)
					continue
				}
			}
			rep.removed(p, o)
		}
		remove, bases = bases, nil
	}
	caches(ctx, e, rep, o)
	return rep, nil
}

// Removed is one image that a prune removed (or, dry, would remove).
type Removed struct {
	// Ref is the image's tags, or its reference in the registry.
	Ref string `json:"ref"`
	// ID is the image's id, or its manifest's digest in the registry.
	ID         string    `json:"id"`
	Experiment string    `json:"experiment,omitempty"`
	Bytes      int64     `json:"bytes"`
	Created    time.Time `json:"created"`
}

// Report is what a prune did: xrun prune --json prints it.
type Report struct {
	// Where is the Docker host or the registry pruned.
	Where   string    `json:"where"`
	DryRun  bool      `json:"dry_run"`
	Removed []Removed `json:"removed"`
	// Bytes is the size of the removed images (layers that kept images
	// share stay).
	Bytes int64 `json:"bytes"`
	// InUse, Young and Shared count the images kept: used by a container
	// (on a cluster: named by a Job), made within --older-than, and (in a
	// registry) sharing their manifest with a kept tag.
	InUse  int `json:"kept_in_use"`
	Young  int `json:"kept_young"`
	Shared int `json:"kept_shared"`
	// Bases counts the images kept because another image, kept, is built
	// on them (Docker hosts).
	Bases int `json:"kept_bases,omitempty"`
	// Caches are the compile-cache volumes removed (Docker hosts), of
	// CacheBytes in all; CachesInUse and CachesKept count those kept (in
	// use by a container; their base is still there, without Caches).
	Caches      []Cache  `json:"caches,omitempty"`
	CacheBytes  int64    `json:"cache_bytes,omitempty"`
	CachesInUse int      `json:"caches_kept_in_use,omitempty"`
	CachesKept  int      `json:"caches_kept,omitempty"`
	Errors      []string `json:"errors,omitempty"`
	// Standbys counts the standby containers removed (Docker hosts),
	// which wait for an experiment's next submit.
	Standbys int `json:"standbys,omitempty"`

	inUseWords, madeWord, freedNote string
	errs                            []error
}

func (r *Report) fail(err error) {
	r.errs = append(r.errs, err)
	r.Errors = append(r.Errors, err.Error())
}

// removed records p, and prints it on o.Out.
func (r *Report) removed(p Removed, o Options) {
	r.Removed = append(r.Removed, p)
	r.Bytes += p.Bytes
	switch {
	case o.Out == nil:
	case o.DryRun:
		fmt.Fprintf(o.Out, "would remove %s (%s, %s, %s %s)\n", p.Ref, p.Experiment, render.Bytes(p.Bytes), r.madeWord, render.Ago(p.Created, time.Now()))
	default:
		fmt.Fprintf(o.Out, "removed %s (%s)\n", p.Ref, p.Experiment)
	}
}

// Err joins the removals that failed.
func (r *Report) Err() error { return errors.Join(r.errs...) }

// Summary writes the one line that says what the prune did and kept
// (and a second for the compile caches, where there were any).
func (r *Report) Summary(w io.Writer, o Options) {
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	kept := fmt.Sprintf("kept %d %s", r.InUse, r.inUseWords)
	if o.OlderThan > 0 {
		kept += fmt.Sprintf(" and %d %s in the last %s", r.Young, r.madeWord, o.OlderThan)
	}
	if r.Shared > 0 {
		kept += fmt.Sprintf(", and %d that share their manifest with a kept tag", r.Shared)
	}
	if r.Bases > 0 {
		kept += fmt.Sprintf(", and %d that a kept image is built on", r.Bases)
	}
	fmt.Fprintf(w, "%s %d %s from %s (up to %s; %s); %s\n", verb, len(r.Removed), render.Plural(len(r.Removed), "image", "images"), r.Where, render.Bytes(r.Bytes), r.freedNote, kept)
	if r.Standbys > 0 {
		fmt.Fprintf(w, "%s %d standby %s (the next submit of %s starts cold)\n", verb, r.Standbys, render.Plural(r.Standbys, "container", "containers"), render.Plural(r.Standbys, "its experiment", "their experiments"))
	}
	if len(r.Caches) > 0 || r.CachesInUse+r.CachesKept > 0 {
		fmt.Fprintf(w, "%s %d compile-cache %s (%s); kept %d in use and %d whose base is on the host (--caches removes those)\n",
			verb, len(r.Caches), render.Plural(len(r.Caches), "volume", "volumes"), r.cacheSize(), r.CachesInUse, r.CachesKept)
	}
}

// tags are an image's real tags ("<none>:<none>" is none).
func tags(im engine.Image) []string {
	var out []string
	for _, t := range im.Tags {
		if t != "<none>:<none>" {
			out = append(out, t)
		}
	}
	return out
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
