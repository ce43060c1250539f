package prune

import (
	"context"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
)

// Archives is a place that keeps job images as files its jobs load
// (client/backend/slurm's Backend with the docker runtime).
type Archives interface {
	// Where names the place, as job records do.
	Where() string
	// Archives lists the image files, saying which a job that has not
	// ended loads.
	Archives(ctx context.Context) ([]backend.Archive, error)
	// RemoveArchive removes one of them.
	RemoveArchive(ctx context.Context, name string) error
}

// ClusterArchives removes the image files of a that no job that has not
// ended loads, copied or last used by a submit more than o.OlderThan
// ago. The place is the caller's own (a Slurm cluster's directory under
// their home), so o.Owner and o.Labels do not apply.
func ClusterArchives(ctx context.Context, a Archives, o Options) (*Report, error) {
	list, err := a.Archives(ctx)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-o.OlderThan)
	rep := &Report{Where: a.Where(), DryRun: o.DryRun, Removed: []Removed{}, inUseWords: "loaded by jobs that have not ended",
		madeWord: "copied or used", freedNote: "each image with the layers no other image has"}
	for _, ar := range list {
		switch {
		case ar.InUse:
			rep.InUse++
		case ar.Modified.After(cutoff):
			rep.Young++
		default:
			if !o.DryRun {
				if err := a.RemoveArchive(ctx, ar.Name); err != nil {
					rep.fail(err)
					continue
				}
			}
			rep.removed(Removed{Ref: ar.Name, Bytes: ar.Bytes, Created: ar.Modified}, o)
		}
	}
	return rep, nil
}
