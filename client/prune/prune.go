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

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/table"
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
	// Owner keeps what is not this owner's (dev.xrun.owner): another
	// user's standbys, images and compile caches, and those of no owner
	// (made by an xrun before owners). "" is every user's (--all-users).
	Owner string
	// Out gets a line for each removal as it happens; nil prints none
	// (the report goes out as JSON).
	Out io.Writer
}

// mine says an object with these labels is o.Owner's.
func (o Options) mine(labels map[string]string) bool {
	return o.Owner == "" || labels[contract.LabelOwner] == o.Owner
}

// Standbys removes a Docker host's idle standby containers of an owner
// ("": everyone's), or with dry only lists them (client/backend/dockerhost's
// Backend).
type Standbys interface {
	RemoveStandbys(ctx context.Context, owner string, dry bool) ([]engine.Container, error)
}

// Host removes the job images (labelled dev.xrun.experiment, with
// o.Labels) on e that no container uses, running or stopped, built more
// than o.OlderThan ago, and the compile-cache volumes (Caches), of
// o.Owner; the standbys of o.Owner first. What could
// not be removed is in the report's errors; err is for a host that could
// not be read.
func Host(ctx context.Context, e engine.Engine, standbys Standbys, o Options) (*Report, error) {
	filter := map[string]string{contract.LabelExperiment: ""}
	for k, v := range o.Labels {
		filter[k] = v
	}
	// Standbys hold images and cache volumes for a next submit that a
	// prune says is not coming soon: they go first.
	removed, err := standbys.RemoveStandbys(ctx, o.Owner, o.DryRun)
	if err != nil {
		return nil, err
	}
	sbs := make([]Standby, 0, len(removed))
	for _, c := range removed {
		sb := Standby{Name: c.Name, Experiment: c.Labels[contract.LabelExperiment], Owner: c.Labels[contract.LabelOwner]}
		sbs = append(sbs, sb)
		if o.Out != nil {
			verb := "removed"
			if o.DryRun {
				verb = "would remove"
			}
			fmt.Fprintf(o.Out, "%s standby container %s (%s, %s's)\n", verb, sb.Name, sb.Experiment, sb.Owner)
		}
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
	inUse, young, others := 0, 0, 0
	for _, im := range ims {
		switch {
		case parents[im.ID] && len(tags(im)) == 0:
		case !o.mine(im.Labels):
			others++
		case used[im.ID]:
			inUse++
		case im.Created.After(cutoff):
			young++
		default:
			remove = append(remove, im)
		}
	}
	sort.SliceStable(remove, func(i, j int) bool { return remove[i].Created.Before(remove[j].Created) })
	rep := &Report{Where: e.Host(), DryRun: o.DryRun, InUse: inUse, Young: young, Removed: []Removed{}, Standbys: len(sbs), StandbyContainers: sbs, Others: others, Owner: o.Owner,
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

// Standby is a standby container that a prune removed (or would).
type Standby struct {
	Name       string `json:"name"`
	Experiment string `json:"experiment,omitempty"`
	Owner      string `json:"owner,omitempty"`
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
	// which wait for an experiment's next submit; StandbyContainers are
	// they.
	Standbys          int       `json:"standbys,omitempty"`
	StandbyContainers []Standby `json:"standby_containers,omitempty"`
	// Owner is the user whose objects the prune removed ("": every
	// user's, --all-users); Others and CachesOthers count the images and
	// compile-cache volumes kept as another user's, or of no owner.
	Owner        string `json:"owner,omitempty"`
	Others       int    `json:"kept_other_owners,omitempty"`
	CachesOthers int    `json:"caches_kept_other_owners,omitempty"`

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
	case o.DryRun && p.Experiment == "":
		fmt.Fprintf(o.Out, "would remove %s (%s, %s %s)\n", p.Ref, table.Bytes(p.Bytes), r.madeWord, render.Ago(p.Created, time.Now()))
	case o.DryRun:
		fmt.Fprintf(o.Out, "would remove %s (%s, %s, %s %s)\n", p.Ref, p.Experiment, table.Bytes(p.Bytes), r.madeWord, render.Ago(p.Created, time.Now()))
	case p.Experiment == "":
		fmt.Fprintf(o.Out, "removed %s (%s)\n", p.Ref, table.Bytes(p.Bytes))
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
	if r.Others > 0 {
		kept += fmt.Sprintf(", and %d of other users or of none (--all-users removes those)", r.Others)
	}
	fmt.Fprintf(w, "%s %d %s from %s (up to %s; %s); %s\n", verb, len(r.Removed), render.Plural(len(r.Removed), "image", "images"), r.Where, table.Bytes(r.Bytes), r.freedNote, kept)
	if r.Standbys > 0 {
		fmt.Fprintf(w, "%s %d standby %s (the next submit of %s starts cold)\n", verb, r.Standbys, render.Plural(r.Standbys, "container", "containers"), render.Plural(r.Standbys, "its experiment", "their experiments"))
	}
	if len(r.Caches) > 0 || r.CachesInUse+r.CachesKept+r.CachesOthers > 0 {
		others := ""
		if r.CachesOthers > 0 {
			others = fmt.Sprintf(", and %d of other users or of none (--all-users)", r.CachesOthers)
		}
		fmt.Fprintf(w, "%s %d compile-cache %s (%s); kept %d in use and %d whose base is on the host (--caches removes those)%s\n",
			verb, len(r.Caches), render.Plural(len(r.Caches), "volume", "volumes"), r.cacheSize(), r.CachesInUse, r.CachesKept, others)
	}
	if r.Owner != "" {
		fmt.Fprintf(w, "pruned %s's alone; --all-users prunes every user's\n", r.Owner)
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
