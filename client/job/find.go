package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/text"
)

// Resolve finds a job of the store by id or unique id prefix: an unknown
// or ambiguous reference is a usage error (exit 3), a store that cannot be
// read an infrastructure one (4).
func (m *Manager) Resolve(ref string) (*store.Job, error) {
	j, err := m.Store.Resolve(ref)
	var nf *store.NotFoundError
	var amb *store.AmbiguousError
	switch {
	case errors.As(err, &nf) && !nf.Malformed:
		if id, parts, perr := m.partsOf(ref); perr == nil && parts != nil {
			return nil, &contract.ExitError{Code: contract.ExitUsage, Err: &PartsError{ID: id, Parts: parts}}
		}
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: err}
	case errors.As(err, &nf) || errors.As(err, &amb):
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: err}
	case err != nil:
		return nil, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	}
	return j, nil
}

// Find resolves ref, a job id or the start of one, in the job store and,
// failing that, among the jobs on the host sel picks: xrun ps lists those
// too (a job submitted from another machine or with another
// XDG_DATA_HOME, known from its container's labels). A job found there is
// adopted: it gets a record in this store, so that status, logs, results,
// wait and cancel follow it as they follow the store's own.
func (m *Manager) Find(ctx context.Context, ref string, sel connect.Selection) (*store.Job, error) {
	return m.find(ctx, ref, sel, nil)
}

// FindToAct is Find for a command that acts on the job (cancel, exec): a
// job found on the host that is another user's is refused unless force,
// before anything of it is recorded in this store (CheckOwner).
func (m *Manager) FindToAct(ctx context.Context, ref string, sel connect.Selection, force bool, command string) (*store.Job, error) {
	j, err := m.find(ctx, ref, sel, func(j *store.Job) error { return CheckOwner(j, force, command) })
	if err != nil {
		return nil, err
	}
	return j, CheckOwner(j, force, command)
}

// find is Find; allowed, when set, judges a job found on the host before
// it is adopted.
func (m *Manager) find(ctx context.Context, ref string, sel connect.Selection, allowed func(*store.Job) error) (*store.Job, error) {
	j, err := m.Resolve(ref)
	var nf *store.NotFoundError
	if err == nil || !errors.As(err, &nf) || nf.Malformed {
		return j, err
	}
	b, berr := m.Backends.Selected(ctx, sel)
	if berr != nil {
		if sel.Explicit() {
			return nil, berr
		}
		// Nobody asked for that host: the store's answer stands.
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("%w (the default host could not be asked: %v)", nf, text.OneLine(berr.Error()))}
	}
	hits, merr := FindListed(ctx, b, ref, func(id string) bool { return strings.HasPrefix(id, ref) })
	switch {
	case errors.Is(merr, ErrNoContainer):
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("%w; not on %s either%s", nf, b.Where(), connect.NotSearched(sel))}
	case merr != nil:
		return nil, merr
	}
	found := Unrecorded(newest(hits))
	if allowed != nil {
		if err := allowed(found); err != nil {
			return nil, err
		}
	}
	adopted, err := m.Store.Adopt(found)
	if err == nil {
		fmt.Fprintf(m.Err, "job %s (%s) is not in this job store: found on %s, recorded here\n", adopted.ID, adopted.Experiment, b.Where())
	}
	return adopted, err
}

// ErrNoContainer is a job id that no job on a backend has.
var ErrNoContainer = errors.New("no container")

// FindListed returns the listings on b (finished ones too) whose job id
// match selects, all of one job, or ErrNoContainer when there are none.
func FindListed(ctx context.Context, b backend.Backend, ref string, match func(id string) bool) ([]backend.Listed, error) {
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
		return nil, ErrNoContainer
	case len(ids) > 1:
		return nil, &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("%q matches %d jobs on %s: give more of the id", ref, len(ids), b.Where())}
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

// Unrecorded is the record of a job that the store does not have, from
// what its backend says of it: its status from its state alone (its
// results.json is not copied for a listing), in the same words as a
// recorded job's.
func Unrecorded(l backend.Listed) *store.Job {
	j := l.Job
	j.Status = StatusOf(l.State)
	if l.State.Phase == backend.Exited {
		code := l.State.ExitCode
		j.ExitCode = &code
	}
	return &j
}

// lookers is how many unfinished jobs List looks at at once.
const lookers = 8

// List returns the jobs of the store, refreshed where they have not ended
// (a host that cannot be asked makes them unknown), and the jobs on each
// of the backends sels pick that the store has no record of; all of them
// with all, else those that have not ended. Every host asked must answer:
// a listing without one would read as "no jobs there". Records that
// cannot be read are listed as unreadable, and warn names their files.
func (m *Manager) List(ctx context.Context, sels []connect.Selection, all bool, warn func(string)) ([]*store.Job, error) {
	var bs []backend.Backend
	for _, sel := range sels {
		b, err := m.Backends.Selected(ctx, sel)
		if err != nil {
			return nil, err
		}
		bs = append(bs, b)
	}
	entries, err := m.Store.Entries()
	if err != nil {
		return nil, err
	}
	var list []*store.Job
	known := map[string]bool{}
	// The jobs that have not ended are looked at together, a few at a
	// time: over a slow ssh to a login node one look takes seconds.
	var looks errgroup.Group
	looks.SetLimit(lookers)
	for _, e := range entries {
		known[e.ID] = true
		j := e.Job
		if e.Err != nil {
			j = &store.Job{ID: e.ID, Status: store.StatusUnreadable, Error: e.Err.Error(), Created: e.Modified}
			warn(j.Error)
		} else if !store.Final(j.Status) || j.Finished == nil {
			looks.Go(func() error {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				m.Look(rctx, j)
				return nil
			})
		}
		list = append(list, j)
	}
	looks.Wait()
	for _, b := range bs {
		listed, err := b.List(ctx, all)
		if err != nil {
			return nil, err
		}
		for _, l := range listed {
			if !known[l.Job.ID] {
				known[l.Job.ID] = true
				list = append(list, Unrecorded(l))
			}
		}
	}
	shown := []*store.Job{}
	for _, j := range list {
		if all || !store.Final(j.Status) && j.Status != store.StatusRemoved {
			shown = append(shown, j)
		}
	}
	sort.SliceStable(shown, func(x, y int) bool { return shown[x].Created.After(shown[y].Created) })
	return shown, nil
}
