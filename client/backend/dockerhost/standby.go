package dockerhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// A standby is the container of an experiment's next job, started before
// that job exists: its runner finds Python, writes the harness and lets
// the zygote import numpy, torch and triton, then waits
// (runner/run/standby.go). The next submit of the same experiment with the
// same image, settings and GPUs claims it, copies the code in and hands it
// the job, and skips the container's start and those imports. It runs no
// experiment code before that, and serves one job: it is that job's
// container from then on. docs/performance.md, "Warm starts", has the
// figures; docs/architecture.md the design.

// LabelStandby marks a standby; its value is StandbyKey of its spec.
const LabelStandby = contract.LabelStandby

// labelStandbyUntil is when a standby stops waiting (RFC 3339): a
// submit claims none that would stop within standbyMargin, in case it
// stops before its job reaches it.
const labelStandbyUntil = "dev.xrun.standby-until"

// standbyMargin is the least time a claimed standby must still wait.
const standbyMargin = time.Minute

// standbySuffix ends the name of a standby no job has claimed yet; the
// claim renames it to its job's name.
const standbySuffix = contract.StandbySuffix

// DefaultStandbyIdle is how long a standby waits for its job before it
// exits having run nothing.
const DefaultStandbyIdle = 15 * time.Minute

// ErrStandbyMismatch is backend.ErrStandbyMismatch.
var ErrStandbyMismatch = backend.ErrStandbyMismatch

var _ backend.Standbys = (*Backend)(nil)

// Claim is ClaimStandby, as backend.Standbys.
func (b *Backend) Claim(ctx context.Context, experiment, owner string) (backend.Standby, bool) {
	if st := b.ClaimStandby(ctx, experiment, owner); st != nil {
		return st, true
	}
	return nil, false
}

// Leave is MakeStandby with the default wait, as backend.Standbys.
func (b *Backend) Leave(ctx context.Context, s backend.Spec) error {
	return b.MakeStandby(ctx, s, DefaultStandbyIdle)
}

// ID is the job id the standby was made for.
func (st *Standby) ID() string { return st.JobID }

// perSubmitLabels are the labels that differ between two submits of the
// same experiment and settings (the hashes of the code and of xrun.yaml,
// which the runner reads from the code it is handed), that only a standby
// has, or that a standby must not carry: the GPUs a job holds, which
// every xrun, older ones included, counts as busy (the standby's GPUs are
// in its device request, which the key compares). The job in a standby
// holds its GPUs by their reservations (gpus.Assigner), as every job does.
// The variables that differ are contract.StandbyEnv: the standby gets
// them when it is handed its job.
var perSubmitLabels = []string{contract.LabelCodeHash, contract.LabelSpecHash, gpus.LabelGPUIDs, LabelStandby, labelStandbyUntil}

// StandbyKey is what a standby and its job must share: the container
// spec of s less its name, its per-submit variables and labels. A job
// adopts its standby's id, so s carries it already.
func StandbyKey(s backend.Spec) string {
	cs := ContainerSpec(withoutPerSubmit(s))
	// The job's CPUs are its own (client/gpus, CPUHost): Hand moves the standby
	// onto them.
	cs.Name, cs.CPUSet = "", ""
	// The standby's own variables: how long it waits, and what its zygote
	// imports ahead of the job (which a job's own zygote never does).
	cs.Env = slices.DeleteFunc(cs.Env, func(kv string) bool {
		return strings.HasPrefix(kv, contract.EnvStandby+"=") || strings.HasPrefix(kv, contract.EnvZygotePreload+"=")
	})
	sort.Strings(cs.Env)
	b, err := json.Marshal(cs)
	if err != nil {
		panic(err) // a struct of strings, numbers and maps
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// standbySpec is the standby of s, a job spec made for the standby's
// own job id: no code, no token and no per-submit values yet, waiting
// idle at most.
func standbySpec(s backend.Spec, idle time.Duration) backend.Spec {
	key := StandbyKey(s)
	s = withoutPerSubmit(s)
	s.Name += standbySuffix
	s.Code, s.PostToken = nil, ""
	s.Env = append(s.Env, contract.EnvStandby+"="+strconv.Itoa(int(idle.Seconds())))
	s.Labels[LabelStandby] = key
	s.Labels[labelStandbyUntil] = time.Now().Add(idle).UTC().Format(time.RFC3339)
	return s
}

// withoutPerSubmit is s less its per-submit variables (contract.StandbyEnv)
// and labels (perSubmitLabels), in copies of its slices and maps.
func withoutPerSubmit(s backend.Spec) backend.Spec {
	s.Env = slices.DeleteFunc(slices.Clone(s.Env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(contract.StandbyEnv, k)
	})
	labels := map[string]string{}
	for k, v := range s.Labels {
		if !slices.Contains(perSubmitLabels, k) {
			labels[k] = v
		}
	}
	s.Labels = labels
	return s
}

// MakeStandby starts the standby for the next submit of s's experiment,
// s being that job's spec (with its own new id), then removes the other
// standbys of the experiment and owner on the host, running or exited.
func (b *Backend) MakeStandby(ctx context.Context, s backend.Spec, idle time.Duration) error {
	ss := standbySpec(s, idle)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backend.CreateTimeout)
	id, err := b.Engine.Create(cctx, ContainerSpec(ss))
	cancel()
	if err != nil {
		return fmt.Errorf("make a standby for the next submit: %w", err)
	}
	if err := b.Engine.Start(ctx, id); err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			// A submit that ended at the same time made a newer standby
			// and removed this one before it started: one still waits.
			return nil
		}
		b.remove(ctx, id)
		return fmt.Errorf("start the standby for the next submit: %w", err)
	}
	// One standby waits per experiment and owner: the newest, which two
	// submits that made one at once see alike.
	if cs, err := b.standbys(ctx, s.Labels[contract.LabelExperiment], s.Labels[contract.LabelOwner], waiting); err == nil && len(cs) > 1 {
		sort.Slice(cs, func(i, k int) bool { return newer(cs[i], cs[k]) })
		for _, c := range cs[1:] {
			if b.take(ctx, c) { // not one a submit claimed since
				b.remove(ctx, c.ID)
			}
		}
	}
	return nil
}

// newer orders standbys newest first, by creation and then by id.
func newer(a, b engine.Container) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.ID > b.ID
}

// standbys lists the standbys of experiment and owner ("": any) on the
// host that keep says (waiting or idle), exited ones included.
func (b *Backend) standbys(ctx context.Context, experiment, owner string, keep func(engine.Container) bool) ([]engine.Container, error) {
	sel := map[string]string{LabelStandby: ""}
	if experiment != "" {
		sel[contract.LabelExperiment] = experiment
	}
	if owner != "" {
		sel[contract.LabelOwner] = owner
	}
	cs, err := b.Engine.List(ctx, sel, true)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(cs, func(c engine.Container) bool { return !keep(c) }), nil
}

// lasts says standby c still waits for a job long enough to take one.
func lasts(c engine.Container) bool {
	until, err := time.Parse(time.RFC3339, c.Labels[labelStandbyUntil])
	return err == nil && time.Until(until) > standbyMargin
}

// waiting says c is a standby no job has claimed.
func waiting(c engine.Container) bool {
	return contract.WaitingStandby(strings.TrimPrefix(c.Name, "/"), c.Labels)
}

// idle says c is a standby that runs no job: waiting, or claimed and not
// handed its job (the claiming client died, or is about to hand it).
func idle(c engine.Container) bool {
	return contract.IdleStandby(strings.TrimPrefix(c.Name, "/"), c.Labels)
}

// RemoveStandbys removes every standby on the host that runs no job and
// that no live submit holds (xrun prune): the waiting ones, each claimed
// first as a submit claims it (take), and the claimed ones whose wait is
// over (abandoned: their submit can no longer hand them a job). A claimed
// standby whose wait goes on stays: its submit may be about to hand it its
// job. Only owner's standbys ("": every owner's). With dry it removes
// none. It returns those it removed (would remove), by their names as
// listed.
func (b *Backend) RemoveStandbys(ctx context.Context, owner string, dry bool) ([]engine.Container, error) {
	cs, err := b.standbys(ctx, "", owner, idle)
	if err != nil {
		return nil, err
	}
	sort.Slice(cs, func(i, k int) bool { return cs[i].Name < cs[k].Name })
	var out []engine.Container
	for _, c := range cs {
		c.Name = strings.TrimPrefix(c.Name, "/")
		switch {
		case waiting(c):
			if dry {
				out = append(out, c)
				continue
			}
			if !b.take(ctx, c) {
				continue // a submit claimed it, or it is gone
			}
		case !abandoned(c):
			continue
		case dry:
			out = append(out, c)
			continue
		}
		if err := b.Engine.Remove(ctx, c.ID, true); err == nil {
			out = append(out, c)
		} else if !errors.Is(err, engine.ErrNotFound) {
			return out, err
		}
	}
	return out, nil
}

// take claims waiting standby c, as listed, for its removal as a submit
// claims it for its job: by renaming it, by the name it was listed with,
// to its claimed name. The daemon's names are unique and a rename finds
// the container by that name, so take fails (false) once a submit has
// claimed it, or handed it its job, since it was listed: whatever the
// order, a standby a submit holds is never removed.
func (b *Backend) take(ctx context.Context, c engine.Container) bool {
	name := strings.TrimPrefix(c.Name, "/")
	return b.Engine.Rename(ctx, name, strings.TrimSuffix(name, standbySuffix)+contract.ClaimedSuffix) == nil
}

// abandoned says claimed standby c waits no more: its wait (with a margin
// for the clocks of two clients) is over, so its submit, which hands a
// standby its job only while it still waits standbyMargin (lasts), never
// will. One without a readable wait is abandoned once it stopped.
func abandoned(c engine.Container) bool {
	until, err := time.Parse(time.RFC3339, c.Labels[labelStandbyUntil])
	if err != nil {
		return c.State != "running"
	}
	return time.Since(until) > standbyMargin
}

// Standby is a standby one submit claimed: no other can.
type Standby struct {
	// JobID is the id the standby was made for, which the job takes.
	JobID string
	b     *Backend
	c     engine.Container
	name  string // its job's container name
}

// ClaimStandby claims a running standby of experiment and owner, the
// newest first, by renaming it, found by its waiting name, to its job's
// name with ClaimedSuffix: the daemon's names are unique, so of two
// submits at once (or a submit and a prune, take) only one gets it.
// A claimed standby is no waiting one (no other submit claims it, no new
// standby replaces it) and no listed job: if the client dies before the
// hand-over, it runs nothing, exits when its wait ends, and prune removes
// it then (abandoned), not before. nil when there is none to claim.
func (b *Backend) ClaimStandby(ctx context.Context, experiment, owner string) *Standby {
	cs, err := b.standbys(ctx, experiment, owner, waiting)
	if err != nil {
		return nil
	}
	sort.Slice(cs, func(i, k int) bool { return newer(cs[i], cs[k]) })
	for _, c := range cs {
		if c.State != "running" || c.Labels[contract.LabelJob] == "" || !lasts(c) {
			continue
		}
		// By the name it was listed with, not its id: a standby that
		// another submit (or a prune) claimed since is not found.
		listed := strings.TrimPrefix(c.Name, "/")
		name := strings.TrimSuffix(listed, standbySuffix)
		if err := b.Engine.Rename(ctx, listed, name+contract.ClaimedSuffix); err != nil {
			continue // another submit's, or gone
		}
		c.Name = name + contract.ClaimedSuffix
		return &Standby{JobID: c.Labels[contract.LabelJob], b: b, c: c, name: name}
	}
	return nil
}

// moveOnto moves container id of job jobID onto the CPUs of s.CPUSet ("":
// all of the host's), where a standby made on another job's CPUs runs its
// own job, and settles it there (settle).
func (b *Backend) moveOnto(ctx context.Context, jobID, id string, s backend.Spec) error {
	set := s.CPUSet
	if set == "" {
		n := hostCPUs(ctx, b.Engine)
		if n <= 0 {
			return nil
		}
		set = gpus.AllCPUs(n)
	}
	if err := b.Engine.SetCPUs(ctx, id, set); err != nil {
		return err
	}
	return b.settle(ctx, jobID, id, s)
}

// Discard removes a claimed standby the job does not use.
func (st *Standby) Discard(ctx context.Context) { st.b.remove(ctx, st.c.ID) }

// Hand gives the claimed standby job j, whose spec is s: when s is the
// spec the standby was made for (ErrStandbyMismatch when not), it renames
// the standby to the job's container name and copies the POST token, the
// code and the per-submit values in, and the job runs from then on;
// j.Started records when, for the job's timeout. On a mismatch the
// standby is removed, and the job starts a container of its own; on a
// failure to rename or copy as well, and the error is the submit's.
func (st *Standby) Hand(ctx context.Context, j *store.Job, s backend.Spec) error {
	if st.c.Labels[LabelStandby] != StandbyKey(s) || st.JobID != j.ID || s.Name != st.name || !lasts(st.c) {
		st.Discard(ctx)
		return ErrStandbyMismatch
	}
	if err := st.b.Engine.Rename(ctx, st.c.ID, st.name); err != nil {
		st.Discard(ctx)
		return fmt.Errorf("hand the job to its standby: %w", err)
	}
	if err := st.b.moveOnto(ctx, j.ID, st.c.ID, s); err != nil {
		st.Discard(ctx)
		return fmt.Errorf("hand the job to its standby: %w", err)
	}
	env := map[string]string{}
	for _, kv := range s.Env {
		if k, v, _ := strings.Cut(kv, "="); slices.Contains(contract.StandbyEnv, k) {
			env[k] = v
		}
	}
	g, _ := json.Marshal(map[string]any{"env": env})
	now := time.Now().UTC()
	if err := st.b.copyIn(ctx, st.c.ID, s, g); err != nil {
		return err
	}
	j.ContainerID, j.ContainerName, j.Started = st.c.ID, st.name, &now
	return nil
}
