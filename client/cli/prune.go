package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/prune"
	"github.com/xrun-dev/xrun/client/render"
	"github.com/xrun-dev/xrun/client/store"
)

type pruneOptions struct {
	host      connect.Selection
	dryRun    bool
	olderThan time.Duration
	labels    map[string]string
	json      bool
	// caches removes every compile-cache volume no container uses.
	caches bool
	// allUsers prunes every user's objects, not only the caller's.
	allUsers bool
	// cluster is what the flags say of a cluster beyond --host and
	// --context (its backend's own options).
	cluster connect.PruneChoice
}

func newPruneCommand(a *App) *cli.Command {
	var o pruneOptions
	return &cli.Command{
		Name:  "prune",
		Usage: "remove your xrun job images, standbys and compile caches that no container uses",
		Description: `A submit builds a new image when the experiment's spec or its image
layers change (an edit of its code alone is copied into the job's container,
no build), and the old image stays on the host. prune removes the job images (labelled dev.xrun.experiment) that no
container on the host uses, running or stopped, built more than --older-than ago
(the default leaves the hour's builds to submits still on their way to starting a
container). Base images are never removed. xrun rm a job first to free its image.

On a shared host prune removes your own objects alone: the images, standbys and
compile-cache volumes labelled dev.xrun.owner with your user name (the owner of
your jobs, as ps shows it). Another user's, and those of no owner (made by an
xrun before owners), stay and are counted; --all-users removes every user's.
Each removal (or, with --dry-run, each that would happen) is named on stdout:
images, standby containers and cache volumes.

It first removes the standby containers that wait on the host for an
experiment's next submit (an attached submit leaves one; they hold images and
cache volumes); that next submit then starts cold. A standby that a submit has
claimed stays until its wait is over (at most 15 minutes): the submit may be
about to hand it its job.

It also removes the compile-cache volumes (Triton, TorchInductor, CUDA extension
builds; one per owner, experiment, base and GPU model) that no container uses and whose
base image is gone from the host; --caches removes every one no container uses.
The next job of that experiment then compiles again.

` + connect.PruneHelp() + `

Examples:
  xrun prune --dry-run
  xrun prune --older-than 0 --host ssh://me@gpu-box
  xrun prune --label team=kernels
  xrun prune --caches --dry-run
  xrun prune --all-users --older-than 0 --dry-run
  ` + strings.Join(connect.PruneExamples(), "\n  "),
		Flags: append(append(hostFlags(&o.host),
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "list what would be removed, remove nothing", Destination: &o.dryRun},
			&cli.DurationFlag{Name: "older-than", Value: time.Hour, Usage: "only images built longer ago than this (0: any age)", Destination: &o.olderThan},
			&cli.StringSliceFlag{Name: "label", Usage: "only images with this label (`KEY=VALUE` or KEY; repeatable), as given to submit --label"},
			&cli.BoolFlag{Name: "all-users", Usage: "prune every user's images, standbys and caches (and those of no owner), not only yours", Destination: &o.allUsers},
			&cli.BoolFlag{Name: "json", Usage: "print what was removed (or would be) and what was kept as JSON", Destination: &o.json},
			&cli.BoolFlag{Name: "caches", Usage: "remove every compile-cache volume that no container uses, not only those whose base image is gone (Docker hosts)", Destination: &o.caches},
		), optionFlags(o.cluster.Options())...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return usageError("prune takes no arguments")
			}
			if err := o.cluster.Finish(a.Backends(), &o.host, c.IsSet); err != nil {
				return err
			}
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
			caps := connect.Capabilities(o.host)
			if o.caches && caps.CachesElsewhere != "" {
				return usageError("--caches does not apply with %s: %s", caps.Flag, caps.CachesElsewhere)
			}
			// What there is to prune is what the place keeps: image
			// archives, a registry's images, or a Docker host's images,
			// standbys and caches.
			b, err := a.Backends().Selected(c.Context, o.host)
			if err != nil {
				return err
			}
			switch b := b.(type) {
			case prune.Archives:
				if o.caches || o.allUsers || len(o.labels) > 0 {
					return usageError("prune %s prunes your image archives on the cluster: leave out --caches, --all-users and --label", caps.Flag)
				}
				return runPruneArchives(c.Context, a, o, b)
			case prune.Cluster:
				if o.cluster.Registry == "" {
					return usageError("prune %s prunes the cluster's registry: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY", caps.Flag)
				}
				return runPruneRegistry(c.Context, a, o, b)
			case prune.Standbys:
				return runPrune(c.Context, a, o, b)
			}
			return fmt.Errorf("%s keeps no standbys to prune", b.Where())
		},
	}
}

func runPrune(ctx context.Context, a *App, o pruneOptions, standbys prune.Standbys) error {
	po := o.options(a)
	e, err := a.Backends().Engine(ctx, o.host)
	if err != nil {
		return err
	}
	rep, err := prune.Host(ctx, e, standbys, po)
	if err != nil {
		return err
	}
	return a.finishPrune(rep, o, po)
}

// runPruneRegistry prunes a cluster's registry.
func runPruneRegistry(ctx context.Context, a *App, o pruneOptions, cluster prune.Cluster) error {
	po := o.options(a)
	// This store's cluster jobs name the repositories that a registry
	// which does not list its repositories would not show.
	var known []*store.Job
	if st, err := a.Store(); err == nil {
		known, _ = st.List()
	}
	rep, err := prune.RegistryImages(ctx, cluster, o.cluster.Registry, known, po, a.Err)
	var bad *prune.BadRegistryError
	if errors.As(err, &bad) {
		return usageError("--registry: %v", bad.Err)
	}
	if err != nil {
		return err
	}
	return a.finishPrune(rep, o, po)
}

// runPruneArchives prunes the image archives a cluster keeps (the Slurm
// docker runtime's).
func runPruneArchives(ctx context.Context, a *App, o pruneOptions, archives prune.Archives) error {
	po := o.options(a)
	po.Owner = "" // the directory is the caller's own
	rep, err := prune.ClusterArchives(ctx, archives, po)
	if err != nil {
		return err
	}
	return a.finishPrune(rep, o, po)
}

func (o pruneOptions) options(a *App) prune.Options {
	po := prune.Options{DryRun: o.dryRun, OlderThan: o.olderThan, Labels: o.labels, Caches: o.caches, Out: a.Out}
	if !o.allUsers {
		po.Owner = store.CurrentUser()
	}
	if o.json {
		po.Out = nil
	}
	return po
}

// finishPrune prints the report as JSON, or its summary on stderr, and
// returns the removals that failed.
func (a *App) finishPrune(r *prune.Report, o pruneOptions, po prune.Options) error {
	if o.json {
		if err := render.JSON(a.Out, r); err != nil {
			return err
		}
		return r.Err()
	}
	r.Summary(a.Err, po)
	return r.Err()
}
