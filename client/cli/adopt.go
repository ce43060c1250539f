package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/jobs"
)

// foundOnHost ends the help of the commands that take a job through
// findJob.
const foundOnHost = `

A job this store has no record of (submitted from another machine or with
another XDG_DATA_HOME; xrun ps lists it from its container) is looked for on
--host (default: DOCKER_HOST, then the docker context) and recorded in this
store.`

// findJob resolves ref, a job id or the start of one, in the job store
// and, failing that, among the jobs on the host sel picks: xrun ps lists
// those too (a job submitted from another machine or with another
// XDG_DATA_HOME, known from its container's labels). A job found there
// is adopted: it gets a record in this store, so that status, logs,
// results, wait and cancel follow it as they follow the store's own.
func (a *App) findJob(ctx context.Context, ref string, sel HostSelection) (*jobs.Job, error) {
	j, err := a.resolveJob(ref)
	var nf *jobs.NotFoundError
	if err == nil || !errors.As(err, &nf) || nf.Malformed {
		return j, err
	}
	b, berr := a.selectedBackend(ctx, sel)
	if berr != nil {
		if sel.explicit() {
			return nil, berr
		}
		// Nobody asked for that host: the store's answer stands.
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w (the default host could not be asked: %v)", nf, firstLine(berr.Error()))}
	}
	hits, merr := findListed(ctx, b, ref, func(id string) bool { return strings.HasPrefix(id, ref) })
	switch {
	case errors.Is(merr, errNoContainer):
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w, nor on %s", nf, b.Where())}
	case merr != nil:
		return nil, merr
	}
	st, err := a.Store()
	if err != nil {
		return nil, err
	}
	adopted, err := st.Adopt(unrecorded(newest(hits)))
	if err == nil {
		fmt.Fprintf(a.Err, "job %s (%s) is not in this job store: found on %s, recorded here\n", adopted.ID, adopted.Experiment, b.Where())
	}
	return adopted, err
}

// explicit reports whether the user named a host, context or cluster.
func (sel HostSelection) explicit() bool {
	return sel.Host != "" || sel.Context != "" || sel.K8s
}

// findListed returns the listings on b (finished ones too) whose job id
// match selects, all of one job, or errNoContainer when there are none.
func findListed(ctx context.Context, b backend.Backend, ref string, match func(id string) bool) ([]backend.Listed, error) {
	list, err := b.List(ctx, true)
	if err != nil {
		return nil, err
	}
	var hits []backend.Listed
	ids := map[string]bool{}
	for _, l := range list {
		if match(l.Job.ID) {
			hits = append(hits, l)
			ids[l.Job.ID] = true
		}
	}
	switch {
	case len(hits) == 0:
		return nil, errNoContainer
	case len(ids) > 1:
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("%q matches %d jobs on %s: give more of the id", ref, len(ids), b.Where())}
	}
	return hits, nil
}

// newest is the listing of the most recently created container among
// hits (a job whose create was retried can have left an older one).
func newest(hits []backend.Listed) backend.Listed {
	n := hits[0]
	for _, l := range hits[1:] {
		if l.Job.Created.After(n.Job.Created) {
			n = l
		}
	}
	return n
}
