package gpus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// Labels of reservation containers and job containers.
const (
	// LabelReservation marks a reservation container; its value is the GPU index.
	LabelReservation = "dev.xrun.gpu-reservation"
	// LabelHolder is the job id a reservation belongs to.
	LabelHolder = "dev.xrun.gpu-holder"
	// LabelGPUIDs on a job container lists the GPU indices it was given ("0,2").
	LabelGPUIDs = "dev.xrun.gpu-ids"
	// LabelInventory marks the short-lived nvidia-smi container.
	LabelInventory = "dev.xrun.gpu-inventory"
)

// ReservationName is the container name that reserves GPU index on a host.
func ReservationName(index int) string { return "xrun-gpu-" + strconv.Itoa(index) }

// Request is what a job asks for: Count GPUs (-1: all of them) or the
// GPUs named in IDs (indices or UUIDs). Type, when set, is a substring the
// GPU names must contain, ignoring case (resources.gpu_type: "H100").
type Request struct {
	Count int
	IDs   []string
	Type  string
}

// String renders the request for messages.
func (r Request) String() string {
	var s string
	switch {
	case len(r.IDs) > 0:
		s = "GPUs " + strings.Join(r.IDs, ",")
	case r.Count < 0:
		s = "all GPUs"
	case r.Count == 1:
		s = "1 GPU"
	default:
		s = fmt.Sprintf("%d GPUs", r.Count)
	}
	if r.Type != "" {
		s += " of type " + r.Type
	}
	return s
}

// ofType reports whether g is of type typ (resources.gpu_type).
func ofType(g GPU, typ string) bool { return spec.IsGPUType(g.Name, typ) }

// BusyError says the GPUs a job asked for are held by other jobs.
type BusyError struct {
	Host    string
	Request Request
	Free    int
	// Holders maps a held GPU index to the job holding it.
	Holders map[int]string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("host %s cannot give this job %s now (%d free; held: %s): wait for them with --queue, or ask for fewer",
		e.Host, e.Request, e.Free, e.held("GPU %d by job %s", ", "))
}

// Assigner hands out GPUs of one host.
type Assigner struct {
	Engine    engine.Engine
	Inventory Inventory
	// Image is an image on the host to create reservation containers
	// from (they are never started); the job's own image does.
	Image string
	// Queue waits for busy GPUs instead of failing with a *BusyError.
	Queue bool
	// Poll is the wait between tries while queued (default 1 s, jittered).
	Poll time.Duration
	// Grace is how long a reservation may exist without its job's
	// container before another client reclaims it (default 5 min).
	Grace time.Duration
	// Progress, when set, gets a line when a queued job starts waiting
	// and whenever what it waits for changes.
	Progress func(string)
}

// Acquire reserves GPUs for jobID and returns them in index order. A
// request for more GPUs than the host has, or for ids it does not have,
// is an error at once; busy GPUs are a *BusyError, or a wait with Queue.
func (a *Assigner) Acquire(ctx context.Context, jobID string, req Request) ([]GPU, error) {
	want, need, err := a.candidates(req)
	if err != nil {
		return nil, err
	}
	poll := a.Poll
	if poll <= 0 {
		poll = time.Second
	}
	var lastMsg string
	for {
		got, holders, err := a.try(ctx, jobID, want, need)
		if err != nil {
			return nil, err
		}
		if len(got) == need {
			sort.Slice(got, func(i, j int) bool { return got[i].Index < got[j].Index })
			return got, nil
		}
		busy := &BusyError{Host: a.Engine.Host(), Request: req, Free: len(want) - len(holders), Holders: holders}
		if !a.Queue {
			return nil, busy
		}
		if msg := busy.waiting(); msg != lastMsg && a.Progress != nil {
			a.Progress(msg)
			lastMsg = msg
		}
		// Jitter keeps many queued clients from retrying in lockstep.
		d := poll/2 + rand.N(poll)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s on host %s: %w", req, a.Engine.Host(), ctx.Err())
		case <-time.After(d):
		}
	}
}

func (e *BusyError) waiting() string {
	return fmt.Sprintf("queued on %s for %s (held: %s)", e.Host, e.Request, e.held("%d:%s", " "))
}

// held lists the held GPUs in index order, each as format gives its index
// and its job, joined by sep.
func (e *BusyError) held(format, sep string) string {
	idx := make([]int, 0, len(e.Holders))
	for i := range e.Holders {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	held := make([]string, len(idx))
	for k, i := range idx {
		held[k] = fmt.Sprintf(format, i, e.Holders[i])
	}
	return strings.Join(held, sep)
}

// candidates returns the GPUs that may serve req and how many it needs.
func (a *Assigner) candidates(req Request) ([]GPU, int, error) {
	all := a.Inventory.GPUs
	host := a.Engine.Host()
	if len(all) == 0 {
		return nil, 0, fmt.Errorf("host %s has no GPUs: pass --cpu to run the CPU sweep", host)
	}
	var inv []GPU
	for _, g := range all {
		if ofType(g, req.Type) {
			inv = append(inv, g)
		}
	}
	if len(inv) == 0 {
		return nil, 0, fmt.Errorf("host %s has no %s GPU (resources.gpu_type; it has %s): submit to a host that has one, or change gpu_type",
			host, req.Type, names(all))
	}
	switch {
	case len(req.IDs) > 0:
		var out []GPU
		seen := map[int]bool{}
		for _, id := range req.IDs {
			g, ok := find(all, id)
			if !ok {
				return nil, 0, fmt.Errorf("host %s has no GPU %q (it has %s): pick ids from that list", host, id, describe(all))
			}
			if !ofType(g, req.Type) {
				return nil, 0, fmt.Errorf("GPU %s of host %s is a %s, not a %s (resources.gpu_type): pick one of %s",
					id, host, g.Name, req.Type, describe(inv))
			}
			if !seen[g.Index] {
				seen[g.Index] = true
				out = append(out, g)
			}
		}
		return out, len(out), nil
	case req.Count < 0:
		return inv, len(inv), nil
	case req.Count > len(inv) && req.Type != "":
		return nil, 0, fmt.Errorf("host %s has %d %s GPUs, the job asks for %d: ask for fewer or pick a bigger host", host, len(inv), req.Type, req.Count)
	case req.Count > len(inv):
		return nil, 0, fmt.Errorf("host %s has %d GPUs, the job asks for %d: ask for fewer or pick a bigger host", host, len(inv), req.Count)
	case req.Count == 0:
		return nil, 0, fmt.Errorf("a GPU request for 0 GPUs: pass --cpu to run without GPUs")
	}
	return inv, req.Count, nil
}

func find(inv []GPU, id string) (GPU, bool) {
	for _, g := range inv {
		if id == g.UUID || id == strconv.Itoa(g.Index) {
			return g, true
		}
	}
	return GPU{}, false
}

// names lists each distinct GPU name of inv with its count ("2x NVIDIA A10G").
func names(inv []GPU) string {
	count := map[string]int{}
	var order []string
	for _, g := range inv {
		if count[g.Name] == 0 {
			order = append(order, g.Name)
		}
		count[g.Name]++
	}
	var s []string
	for _, n := range order {
		s = append(s, fmt.Sprintf("%dx %s", count[n], n))
	}
	return strings.Join(s, ", ")
}

func describe(inv []GPU) string {
	var s []string
	for _, g := range inv {
		s = append(s, strconv.Itoa(g.Index))
	}
	return strings.Join(s, ",")
}

// try makes one pass: it reserves free GPUs of want until it has need.
// If it cannot, it gives back what it took and reports who holds the rest.
func (a *Assigner) try(ctx context.Context, jobID string, want []GPU, need int) ([]GPU, map[int]string, error) {
	labelled, err := a.labelHeld(ctx, jobID)
	if err != nil {
		return nil, nil, err
	}
	holders := map[int]string{}
	var got []GPU
	var made []string
	for _, g := range want {
		if len(got) == need {
			break
		}
		if j, ok := labelled[g.Index]; ok {
			holders[g.Index] = j
			continue
		}
		id, holder, err := a.reserve(ctx, jobID, g)
		if err != nil {
			a.drop(ctx, made)
			return nil, nil, err
		}
		if holder != "" {
			holders[g.Index] = holder
			continue
		}
		got = append(got, g)
		made = append(made, id)
	}
	if len(got) < need {
		a.drop(ctx, made)
		return nil, holders, nil
	}
	return got, holders, nil
}

// labelHeld reads the GPU indices that running xrun jobs other than jobID
// carry in their labels.
func (a *Assigner) labelHeld(ctx context.Context, jobID string) (map[int]string, error) {
	cs, err := a.Engine.List(ctx, map[string]string{LabelGPUIDs: ""}, false)
	if err != nil {
		return nil, fmt.Errorf("list the jobs holding GPUs on host %s: %w", a.Engine.Host(), err)
	}
	held := map[int]string{}
	for _, c := range cs {
		j := c.Labels[contract.LabelJob]
		if j == jobID || c.Finished() {
			continue
		}
		for _, s := range strings.Split(c.Labels[LabelGPUIDs], ",") {
			if i, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
				held[i] = j
			}
		}
	}
	return held, nil
}

// reserve creates the reservation container of g for jobID (Reserve).
func (a *Assigner) reserve(ctx context.Context, jobID string, g GPU) (string, string, error) {
	return Reserve(ctx, a.Engine, a.Image, a.Grace, jobID, ReservationName(g.Index), fmt.Sprintf("GPU %d", g.Index),
		map[string]string{LabelReservation: strconv.Itoa(g.Index), "dev.xrun.gpu-uuid": g.UUID})
}

// Reserve creates the reservation container name (from image, never
// started) for jobID, labelled with labels and LabelHolder; what names
// the device it reserves ("GPU 1", "CPU 3"). It returns the container id
// on success, or the holder's job id when another live job holds it. A
// stale reservation (its job's container finished or gone, or never made
// within grace; default 5 min) is removed, by its id so that a fresh one
// made meanwhile by another client is never touched, and the create
// retried. Release frees every reservation of a job.
func Reserve(ctx context.Context, e engine.Engine, image string, grace time.Duration, jobID, name, what string, labels map[string]string) (string, string, error) {
	l := map[string]string{LabelHolder: jobID}
	for k, v := range labels {
		l[k] = v
	}
	for attempt := 0; attempt < 5; attempt++ {
		id, err := e.Create(ctx, engine.ContainerSpec{
			Name:  name,
			Image: image,
			// Never started: the entrypoint only has to be non-empty.
			Entrypoint:      []string{"xrun-reservation"},
			Labels:          l,
			NetworkDisabled: true,
		})
		if err == nil {
			return id, "", nil
		}
		if !isConflict(err) {
			return "", "", fmt.Errorf("reserve %s on host %s: %w", what, e.Host(), err)
		}
		c, err := e.Inspect(ctx, name)
		if errors.Is(err, engine.ErrNotFound) {
			// The daemon reserves a name before the container exists, so
			// another client's create in progress (or a release just
			// done) looks like this: busy for now, the next pass sees.
			return "", "another client", nil
		}
		if err != nil {
			return "", "", fmt.Errorf("inspect the reservation of %s on host %s: %w", what, e.Host(), err)
		}
		holder := c.Labels[LabelHolder]
		if holder == jobID {
			return c.ID, "", nil
		}
		stale, err := Stale(ctx, e, c, grace)
		if err != nil {
			return "", "", err
		}
		if !stale {
			return "", holder, nil
		}
		err = e.Remove(ctx, c.ID, true)
		if err != nil && (isConflict(err) || strings.Contains(err.Error(), "already in progress")) {
			return "", holder, nil // its own client is freeing it right now
		}
		if err != nil && !errors.Is(err, engine.ErrNotFound) {
			return "", "", fmt.Errorf("reclaim the stale reservation of %s (job %s) on host %s: %w", what, holder, e.Host(), err)
		}
	}
	return "", "", fmt.Errorf("reserve %s on host %s: other clients keep taking it; try again", what, e.Host())
}

// Stale reports whether a reservation's job no longer needs it: its job
// container has finished or is gone, or never appeared within grace
// (default 5 min).
func Stale(ctx context.Context, e engine.Engine, res engine.Container, grace time.Duration) (bool, error) {
	holder := res.Labels[LabelHolder]
	if holder == "" {
		return true, nil
	}
	cs, err := e.List(ctx, map[string]string{contract.LabelJob: holder}, true)
	if err != nil {
		return false, fmt.Errorf("look up job %s on host %s: %w", holder, e.Host(), err)
	}
	return StaleAmong(res, cs, grace), nil
}

// StaleAmong is Stale with the host's job containers already listed (all
// of them, or those of the reservation's job), for many reservations at
// once.
func StaleAmong(res engine.Container, jobs []engine.Container, grace time.Duration) bool {
	holder := res.Labels[LabelHolder]
	if holder == "" {
		return true
	}
	found := false
	for _, c := range jobs {
		if c.Labels[contract.LabelJob] != holder {
			continue
		}
		if !c.Finished() {
			return false
		}
		found = true
	}
	if found {
		return true
	}
	if grace <= 0 {
		grace = 5 * time.Minute
	}
	return !res.Created.IsZero() && time.Since(res.Created) > grace
}

// drop removes reservation containers this pass made.
func (a *Assigner) drop(ctx context.Context, ids []string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		a.Engine.Remove(rctx, id, true)
	}
}

// Release frees every reservation of jobID on the host behind e (its
// GPUs and its CPUs).
func Release(ctx context.Context, e engine.Engine, jobID string) error {
	cs, err := e.List(ctx, map[string]string{LabelHolder: jobID}, true)
	if err != nil {
		return fmt.Errorf("free what job %s reserved on host %s: %w", jobID, e.Host(), err)
	}
	var errs []error
	for _, c := range cs {
		if err := e.Remove(ctx, c.ID, true); err != nil && !errors.Is(err, engine.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("free what job %s reserved on host %s: %w", jobID, e.Host(), errors.Join(errs...))
	}
	return nil
}

// Indices renders assigned GPUs as LabelGPUIDs and device ids take them: "0,2".
func Indices(gs []GPU) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = strconv.Itoa(g.Index)
	}
	return strings.Join(s, ",")
}

// isConflict recognises "the container name is already in use".
func isConflict(err error) bool {
	return cerrdefs.IsConflict(err) || strings.Contains(err.Error(), "is already in use")
}
