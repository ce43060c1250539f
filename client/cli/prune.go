package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/runner/contract"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/backends"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/render"
)

type pruneOptions struct {
	host backends.Selection
	// registry is the cluster's registry (--k8s).
	registry  string
	dryRun    bool
	olderThan time.Duration
	labels    map[string]string
	json      bool
	// caches removes every compile-cache volume no container uses.
	caches bool
}

func newPruneCommand(a *App) *cli.Command {
	var o pruneOptions
	return &cli.Command{
		Name:  "prune",
		Usage: "remove xrun's job images that no container uses",
		Description: `A submit builds a new image when the experiment's spec or its image
layers change (an edit of its code alone is copied into the job's container,
no build), and the old image stays on the host. prune removes the job images (labelled dev.xrun.experiment) that no
container on the host uses, running or stopped, built more than --older-than ago
(the default leaves the hour's builds to submits still on their way to starting a
container). Base images are never removed. xrun rm a job first to free its image.

It also removes the compile-cache volumes (Triton, TorchInductor, CUDA extension
builds; one per experiment, base and GPU model) that no container uses and whose
base image is gone from the host; --caches removes every one no container uses.
The next job of that experiment then compiles again.

With --k8s it prunes the cluster's registry instead (--registry, as given to
submit): the job images under REGISTRY/xrun/ that no Job of the cluster, in any
namespace, names, pushed more than --older-than ago. The registry must allow
deletes; its garbage collection then frees their layers.

Examples:
  xrun prune --dry-run
  xrun prune --older-than 0 --host ssh://me@gpu-box
  xrun prune --label team=kernels
  xrun prune --caches --dry-run
  xrun prune --k8s --registry registry.lab:5000 --dry-run`,
		Flags: append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "list what would be removed, remove nothing", Destination: &o.dryRun},
			&cli.DurationFlag{Name: "older-than", Value: time.Hour, Usage: "only images built longer ago than this (0: any age)", Destination: &o.olderThan},
			&cli.StringSliceFlag{Name: "label", Usage: "only images with this label (`KEY=VALUE` or KEY; repeatable), as given to submit --label"},
			&cli.BoolFlag{Name: "json", Usage: "print what was removed (or would be) and what was kept as JSON", Destination: &o.json},
			&cli.BoolFlag{Name: "caches", Usage: "remove every compile-cache volume that no container uses, not only those whose base image is gone", Destination: &o.caches},
			&cli.StringFlag{Name: "registry", EnvVars: []string{"XRUN_K8S_REGISTRY"}, Usage: "with --k8s: the registry the cluster pulls job images from, HOST[:PORT][/PATH] (read and deleted from with docker login's credentials)", Destination: &o.registry},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("prune takes no arguments")
			}
			o.host.MoveContextToKube()
			if o.olderThan < 0 {
				return usageError("--older-than %s: give a duration >= 0", o.olderThan)
			}
			o.labels = map[string]string{}
			for _, l := range c.StringSlice("label") {
				k, v, _ := strings.Cut(l, "=")
				if k == "" {
					return usageError("--label %q: give KEY=VALUE or KEY", l)
				}
				o.labels[k] = v
			}
			if o.host.K8s {
				if o.registry == "" {
					return usageError("prune --k8s prunes the cluster's registry: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY")
				}
				return runPruneRegistry(c.Context, a, o)
			}
			return runPrune(c.Context, a, o)
		},
	}
}

func runPrune(ctx context.Context, a *App, o pruneOptions) error {
	e, err := a.Backends().Engine(ctx, o.host)
	if err != nil {
		return err
	}
	filter := map[string]string{contract.LabelExperiment: ""}
	for k, v := range o.labels {
		filter[k] = v
	}
	ims, err := e.Images(ctx, filter)
	if err != nil {
		return err
	}
	// Any container counts, not only xrun's: an image someone runs by
	// hand is in use too.
	cs, err := e.List(ctx, nil, true)
	if err != nil {
		return err
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
	cutoff := time.Now().Add(-o.olderThan)
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
	rep := &pruneReport{Where: e.Host(), DryRun: o.dryRun, InUse: inUse, Young: young, Removed: []pruned{},
		inUseWords: "in use by containers", madeWord: "built", freedNote: "layers shared with kept images stay"}
	for _, im := range remove {
		name := strings.Join(tags(im), ", ")
		if name == "" {
			name = "untagged " + shortID(im.ID)
		}
		p := pruned{Ref: name, ID: im.ID, Experiment: im.Labels[contract.LabelExperiment], Bytes: im.Size, Created: im.Created}
		if !o.dryRun {
			if err := e.RemoveImage(ctx, im.ID); errors.Is(err, engine.ErrNotFound) {
				continue // gone since it was listed
			} else if err != nil {
				rep.fail(err)
				continue
			}
		}
		a.prunedOne(rep, p, o)
	}
	a.pruneCaches(ctx, e, rep, o)
	return a.finishPrune(rep, o)
}

// pruned is one image that prune removed (or, with --dry-run, would remove).
type pruned struct {
	// Ref is the image's tags, or its reference in the registry.
	Ref string `json:"ref"`
	// ID is the image's id, or its manifest's digest in the registry.
	ID         string    `json:"id"`
	Experiment string    `json:"experiment,omitempty"`
	Bytes      int64     `json:"bytes"`
	Created    time.Time `json:"created"`
}

// pruneReport is what a prune did: xrun prune --json prints it.
type pruneReport struct {
	// Where is the Docker host or the registry pruned.
	Where   string   `json:"where"`
	DryRun  bool     `json:"dry_run"`
	Removed []pruned `json:"removed"`
	// Bytes is the size of the removed images (layers that kept images
	// share stay).
	Bytes int64 `json:"bytes"`
	// InUse, Young and Shared count the images kept: used by a container
	// (on a cluster: named by a Job), made within --older-than, and (in a
	// registry) sharing their manifest with a kept tag.
	InUse  int `json:"kept_in_use"`
	Young  int `json:"kept_young"`
	Shared int `json:"kept_shared"`
	// Caches are the compile-cache volumes removed (Docker hosts), of
	// CacheBytes in all; CachesInUse and CachesKept count those kept (in
	// use by a container; their base is still there, without --caches).
	Caches      []prunedCache `json:"caches,omitempty"`
	CacheBytes  int64         `json:"cache_bytes,omitempty"`
	CachesInUse int           `json:"caches_kept_in_use,omitempty"`
	CachesKept  int           `json:"caches_kept,omitempty"`
	Errors      []string      `json:"errors,omitempty"`

	inUseWords, madeWord, freedNote string
	errs                            []error
}

func (r *pruneReport) fail(err error) {
	r.errs = append(r.errs, err)
	r.Errors = append(r.Errors, err.Error())
}

// prunedOne records p, and prints it unless the report goes out as JSON.
func (a *App) prunedOne(r *pruneReport, p pruned, o pruneOptions) {
	r.Removed = append(r.Removed, p)
	r.Bytes += p.Bytes
	switch {
	case o.json:
	case o.dryRun:
		fmt.Fprintf(a.Out, "would remove %s (%s, %s, %s %s)\n", p.Ref, p.Experiment, fmtBytes(p.Bytes), r.madeWord, render.Ago(p.Created, time.Now()))
	default:
		fmt.Fprintf(a.Out, "removed %s (%s)\n", p.Ref, p.Experiment)
	}
}

// finishPrune prints the report as JSON, or a summary line on stderr, and
// returns the removals that failed.
func (a *App) finishPrune(r *pruneReport, o pruneOptions) error {
	if o.json {
		if err := render.JSON(a.Out, r); err != nil {
			return err
		}
		return errors.Join(r.errs...)
	}
	verb := "removed"
	if o.dryRun {
		verb = "would remove"
	}
	kept := fmt.Sprintf("kept %d %s", r.InUse, r.inUseWords)
	if o.olderThan > 0 {
		kept += fmt.Sprintf(" and %d %s in the last %s", r.Young, r.madeWord, o.olderThan)
	}
	if r.Shared > 0 {
		kept += fmt.Sprintf(", and %d that share their manifest with a kept tag", r.Shared)
	}
	noun := "images"
	if len(r.Removed) == 1 {
		noun = "image"
	}
	fmt.Fprintf(a.Err, "%s %d %s from %s (up to %s; %s); %s\n", verb, len(r.Removed), noun, r.Where, fmtBytes(r.Bytes), r.freedNote, kept)
	if len(r.Caches) > 0 || r.CachesInUse+r.CachesKept > 0 {
		fmt.Fprintf(a.Err, "%s %d compile-cache %s (%s); kept %d in use and %d whose base is on the host (--caches removes those)\n",
			verb, len(r.Caches), plural(len(r.Caches), "volume", "volumes"), r.cacheSize(), r.CachesInUse, r.CachesKept)
	}
	return errors.Join(r.errs...)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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

// fmtBytes renders a size as docker does: "1.2GB", "85.3MB".
func fmtBytes(n int64) string {
	f := float64(n)
	for _, u := range []string{"B", "kB", "MB", "GB"} {
		if f < 1000 {
			return fmt.Sprintf("%.3g%s", f, u)
		}
		f /= 1000
	}
	return fmt.Sprintf("%.3gTB", f)
}
