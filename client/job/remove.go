package job

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// RemoveOptions say what Remove removes and where it looks.
type RemoveOptions struct {
	// Where is where to look for a job this store has no record of (ps
	// lists those from a host's containers), and for the container of a
	// record that cannot be read.
	Where connect.Selection
	// Force removes a running job too (and a record that cannot be read).
	Force bool
	// KeepRecord removes the container alone.
	KeepRecord bool
}

// Remove removes the job ref names: its container (after copying its
// results and logs into the store) and, unless o.KeepRecord, its record.
// It returns the id removed.
func (m *Manager) Remove(ctx context.Context, ref string, o RemoveOptions) (string, error) {
	j, err := m.Resolve(ref)
	var re *store.RecordError
	if errors.As(err, &re) && o.Force && !o.KeepRecord {
		return re.ID, m.removeUnreadable(ctx, re, o.Where)
	}
	var nf *store.NotFoundError
	if errors.As(err, &nf) {
		b, herr := m.Backends.Selected(ctx, o.Where)
		if herr != nil {
			return "", herr
		}
		id, herr := RemoveListed(ctx, b, ref, o.Force, func(id string) bool { return ref != "" && strings.HasPrefix(id, ref) })
		if errors.Is(herr, ErrNoContainer) {
			return "", err
		}
		return id, herr
	}
	if err != nil {
		return "", err
	}
	if err := CheckOwner(j, o.Force, "rm"); err != nil {
		return "", err
	}
	s, ok, err := m.Refresh(ctx, j)
	if err != nil && !errors.Is(err, backend.ErrNotFound) {
		return "", err
	}
	if !ok && j.ContainerID == "" {
		m.removeUnknownContainer(ctx, j)
	}
	if ok {
		if !s.Finished() && !o.Force {
			return "", &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("job %s is %s: cancel it first (xrun cancel %s) or use --force", j.ID, j.Status, j.ID)}
		}
		b, err := m.Backends.For(ctx, j)
		if err != nil {
			return "", err
		}
		if err := b.Remove(ctx, j, o.Force); err != nil && !errors.Is(err, backend.ErrNotFound) {
			return "", err
		}
	}
	if !o.KeepRecord {
		if err := m.Store.Remove(j.ID); err != nil {
			return "", err
		}
	}
	return j.ID, nil
}

// removeUnreadable removes a job whose record cannot be read. The job's
// host was in that record, so its containers are looked for, by the job
// label, on the host sel names (--host, --context, --k8s; else the
// default), and the user is told where.
func (m *Manager) removeUnreadable(ctx context.Context, re *store.RecordError, sel connect.Selection) error {
	b, err := m.Backends.Selected(ctx, sel)
	if err == nil {
		_, err = RemoveListed(ctx, b, re.ID, true, func(id string) bool { return id == re.ID })
		switch {
		case errors.Is(err, ErrNoContainer):
			fmt.Fprintf(m.Err, "job %s: no container of it on %s (if it ran on another host, `xrun rm -f --host HOST %s` there)\n", re.ID, b.Where(), re.ID)
			err = nil
		case err != nil:
			return fmt.Errorf("remove the container of job %s: %w", re.ID, err)
		}
	}
	if err != nil {
		fmt.Fprintf(m.Err, "warning: job %s: its container, if any, is left: %v\n", re.ID, err)
	}
	return m.Store.Remove(re.ID)
}

// removeUnknownContainer removes the container of job j, whose record has
// none: a create that failed or was interrupted can have made one all
// the same (the daemon got the request), found by the job label on the
// job's host. What cannot be looked for is a warning, since the record
// goes either way.
func (m *Manager) removeUnknownContainer(ctx context.Context, j *store.Job) {
	if j.Host == "" {
		return
	}
	b, err := m.Backends.For(ctx, j)
	if err == nil {
		_, err = RemoveListed(ctx, b, j.ID, true, func(id string) bool { return id == j.ID })
	}
	if err != nil && !errors.Is(err, ErrNoContainer) {
		fmt.Fprintf(m.Err, "warning: job %s: its container, if any, is left on %s: %v (xrun ps --all lists it)\n", j.ID, j.Host, err)
	}
}

// RemoveListed removes the jobs on b whose id match selects, all of one
// job; running ones only with force. It returns the job's id, or
// ErrNoContainer when none matches.
func RemoveListed(ctx context.Context, b backend.Backend, ref string, force bool, match func(id string) bool) (string, error) {
	hits, err := FindListed(ctx, b, ref, match)
	if err != nil {
		return "", err
	}
	for _, l := range hits {
		if err := CheckOwner(&l.Job, force, "rm"); err != nil {
			return "", err
		}
		if !l.State.Finished() && !force {
			return "", &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("job %s is %s on %s: cancel it first (xrun cancel %s) or use --force", l.Job.ID, l.State.Detail, b.Where(), l.Job.ID)}
		}
		if err := b.Remove(ctx, &l.Job, force); err != nil && !errors.Is(err, backend.ErrNotFound) {
			return "", err
		}
	}
	return hits[0].Job.ID, nil
}

// Cancel stops job j (cancelOn) and says what became of it: ended is true
// for a job that had ended already. A job another xrun is still creating
// is refused (it has nothing to stop yet).
func (m *Manager) Cancel(ctx context.Context, j *store.Job) (ended bool, err error) {
	if j.ContainerID == "" {
		// Being created, or abandoned by a submit that was killed.
		if _, _, err := m.Refresh(ctx, j); err != nil {
			return false, err
		}
		if j.Status == store.StatusCreated {
			return false, &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("job %s is being created by xrun (pid %d): Ctrl-C in that xrun cancels it, or cancel it once it runs", j.ID, store.CreatorPID(j.Creator))}
		}
		return true, nil
	}
	b, err := m.Backends.For(ctx, j)
	if err != nil {
		return false, err
	}
	ended, err = m.cancelOn(ctx, b, j)
	var nr *NotRecordedError
	var ns *NotStoppedError
	switch {
	case ended, err == nil:
		return ended, err
	case errors.As(err, &nr), errors.As(err, &ns):
		return false, &contract.ExitError{Code: contract.ExitInfra, Err: err}
	case j.StoppedBy == result.StatusCancelled:
		// Stopped and recorded; what failed came after (fetching the
		// results), and the next look fetches them again.
		fmt.Fprintf(m.Err, "warning: %v\n", err)
		return false, nil
	}
	return false, err
}

// CheckOwner refuses (exit 3) to let command (rm, cancel) touch another
// user's job on a shared host unless force. A job without an owner (from
// an xrun before owners) is anyone's.
func CheckOwner(j *store.Job, force bool, command string) error {
	if force || j.Owner == "" {
		return nil
	}
	if me := store.CurrentUser(); j.Owner != me {
		verb := map[string]string{"rm": "remove"}[command]
		if verb == "" {
			verb = command
		}
		return &contract.ExitError{Code: contract.ExitUsage, Err: fmt.Errorf("job %s is %s's, not yours (%s): xrun %s --force %s to %s it anyway", j.ID, j.Owner, me, command, j.ID, verb)}
	}
	return nil
}
