// Package cores gives the jobs of a Docker host CPUs of their own, the way
// package gpus gives them GPUs, so that one owner's job cannot slow down
// another's: a job that reserves CPUs (resources.cpus, or a GPU job's share
// of the host) is the only xrun job that runs on them. Every other job runs
// on the pool, the CPUs that no reservation holds, and is moved off a CPU
// as soon as a job reserves it.
//
// A reservation is a container named after the CPU (xrun-cpu-N), never
// started, labelled with its job (gpus.Reserve); gpus.Release frees a
// job's CPUs with its GPUs, and a reservation whose job has finished is
// taken over by the next job that wants the CPU.
package cores

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/contract"
)

// LabelReservation marks a CPU's reservation container; its value is the
// CPU's number.
const LabelReservation = "dev.xrun.cpu-reservation"

// ReservationName is the container name that reserves CPU cpu on a host.
func ReservationName(cpu int) string { return "xrun-cpu-" + strconv.Itoa(cpu) }

// Host hands out the CPUs of one Docker host.
type Host struct {
	Engine engine.Engine
	// CPUs is how many the host has (its daemon's NCPU).
	CPUs int
	// Image is an image on the host to create reservation containers
	// from (they are never started).
	Image string
	// Queue waits for CPUs other jobs hold instead of failing with a
	// *BusyError.
	Queue bool
	// Keep is how many CPUs a reservation must leave unreserved (at least
	// one while a job runs on the pool).
	Keep int
	// Poll is the wait between tries while queued (default 1 s, jittered).
	Poll time.Duration
	// Progress, when set, gets a line when a queued job starts waiting
	// and whenever what it waits for changes.
	Progress func(string)
}

// BusyError says that the CPUs a job needs are held by other jobs.
type BusyError struct {
	Host string
	// Want is how many CPUs the job asked for (0: a place in the pool);
	// Free how many no job holds, of which the job could have had
	// available (less those kept for the pool).
	Want, Free, CPUs int
	available        int
	// Holders maps a held CPU to the job that holds it.
	Holders map[int]string
}

func (e *BusyError) Error() string {
	if e.Want == 0 {
		return fmt.Sprintf("every CPU of host %s is reserved by other jobs (%s): wait for one with --queue", e.Host, e.held())
	}
	return fmt.Sprintf("host %s cannot give this job %d CPUs now (%d of %d free; held: %s): wait for them with --queue, or ask for fewer (resources.cpus)",
		e.Host, e.Want, e.Free, e.CPUs, e.held())
}

func (e *BusyError) held() string {
	byJob := map[string][]int{}
	var jobs []string
	for cpu, j := range e.Holders {
		if byJob[j] == nil {
			jobs = append(jobs, j)
		}
		byJob[j] = append(byJob[j], cpu)
	}
	sort.Strings(jobs)
	var s []string
	for _, j := range jobs {
		s = append(s, fmt.Sprintf("CPU %s by job %s", Set(byJob[j]), j))
	}
	return strings.Join(s, ", ")
}

// Acquire reserves n CPUs of the host for jobID, the highest free numbers
// first, and moves the jobs of the pool off them. While any job runs on
// the pool, one CPU stays unreserved for it. It returns the CPUs in
// order.
func (h *Host) Acquire(ctx context.Context, jobID string, n int) ([]int, error) {
	if n > h.CPUs {
		return nil, fmt.Errorf("host %s has %d CPUs, the job asks for %d (resources.cpus): ask for fewer or pick a bigger host", h.Engine.Host(), h.CPUs, n)
	}
	return h.wait(ctx, n, func() ([]int, *BusyError, error) { return h.try(ctx, jobID, n) })
}

// Share reserves up to n CPUs for jobID, as many as are free now (less
// Keep and the pool's), without waiting; none when none is free.
func (h *Host) Share(ctx context.Context, jobID string, n int) ([]int, error) {
	// A pass can lose a CPU to another client's reservation made at the
	// same time: the next pass asks for what is left.
	for pass := 0; pass < 5 && n > 0; pass++ {
		got, busy, err := h.try(ctx, jobID, n)
		if err != nil || busy == nil {
			return got, err
		}
		n = min(n-1, busy.available)
	}
	return nil, nil
}

// Pool returns the CPUs that no job has reserved, as a cpuset for a job
// that reserves none ("" when none is reserved: all of them). When every
// CPU is reserved it waits for one with Queue, else it is a *BusyError.
func (h *Host) Pool(ctx context.Context, jobID string) (string, error) {
	var set string
	_, err := h.wait(ctx, 0, func() ([]int, *BusyError, error) {
		st, err := h.read(ctx)
		if err != nil {
			return nil, nil, err
		}
		held := st.held
		free := h.free(held)
		if len(free) == 0 {
			return nil, &BusyError{Host: h.Engine.Host(), CPUs: h.CPUs, Holders: held}, nil
		}
		if len(held) > 0 {
			set = Set(free)
		}
		return free, nil, nil
	})
	return set, err
}

// wait runs try until it gets CPUs, waiting between tries with Queue.
func (h *Host) wait(ctx context.Context, n int, try func() ([]int, *BusyError, error)) ([]int, error) {
	poll := h.Poll
	if poll <= 0 {
		poll = time.Second
	}
	var last string
	for {
		got, busy, err := try()
		if err != nil || busy == nil {
			return got, err
		}
		if !h.Queue {
			return nil, busy
		}
		msg := fmt.Sprintf("queued on %s for %s (held: %s)", h.Engine.Host(), plural(n), busy.held())
		if msg != last && h.Progress != nil {
			h.Progress(msg)
			last = msg
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %s on host %s: %w", plural(n), h.Engine.Host(), ctx.Err())
		case <-time.After(poll/2 + rand.N(poll)):
		}
	}
}

func plural(n int) string {
	switch n {
	case 0:
		return "a CPU no job reserved"
	case 1:
		return "1 CPU"
	}
	return fmt.Sprintf("%d CPUs", n)
}

// try makes one pass: it reserves n free CPUs, or gives back what it took
// and says who holds the rest.
func (h *Host) try(ctx context.Context, jobID string, n int) ([]int, *BusyError, error) {
	st, err := h.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	held, pool := st.held, st.poolJobs(jobID)
	free := h.free(held)
	keep := h.Keep
	if len(pool) > 0 {
		keep = max(keep, 1) // the pool's jobs keep a CPU
	}
	busy := &BusyError{Host: h.Engine.Host(), Want: n, Free: len(free), CPUs: h.CPUs, Holders: held, available: max(len(free)-keep, 0)}
	if len(free)-keep < n {
		return nil, busy, nil
	}
	slices.Reverse(free)
	var got []int
	var made []string
	for _, cpu := range free {
		if len(got) == n {
			break
		}
		id, holder, err := gpus.Reserve(ctx, h.Engine, h.Image, 0, jobID, ReservationName(cpu), "CPU "+strconv.Itoa(cpu),
			map[string]string{LabelReservation: strconv.Itoa(cpu)})
		if err != nil {
			h.drop(ctx, made)
			return nil, nil, err
		}
		if holder != "" {
			held[cpu] = holder
			continue
		}
		got, made = append(got, cpu), append(made, id)
	}
	if len(got) < n {
		h.drop(ctx, made)
		return nil, busy, nil
	}
	sort.Ints(got)
	if err := h.confine(ctx, pool, h.free(withJob(held, got, jobID))); err != nil {
		h.drop(ctx, made)
		return nil, nil, err
	}
	return got, nil, nil
}

func withJob(held map[int]string, cpus []int, jobID string) map[int]string {
	out := map[int]string{}
	for k, v := range held {
		out[k] = v
	}
	for _, c := range cpus {
		out[c] = jobID
	}
	return out
}

// state is what one look at the host reads: which CPUs live reservations
// hold, for which job, and the containers of xrun jobs, ended ones too.
type state struct {
	held map[int]string
	jobs []engine.Container
}

// read takes one look at the host (two lists, however many reservations
// there are). A stale reservation is left for the next Reserve of its CPU
// to reclaim.
func (h *Host) read(ctx context.Context) (state, error) {
	res, err := h.Engine.List(ctx, map[string]string{LabelReservation: ""}, true)
	if err != nil {
		return state{}, fmt.Errorf("list the CPUs reserved on host %s: %w", h.Engine.Host(), err)
	}
	jobs, err := h.Engine.List(ctx, map[string]string{contract.LabelJob: ""}, true)
	if err != nil {
		return state{}, fmt.Errorf("list the jobs on host %s: %w", h.Engine.Host(), err)
	}
	st := state{held: map[int]string{}, jobs: jobs}
	for _, c := range res {
		cpu, err := strconv.Atoi(c.Labels[LabelReservation])
		if err != nil || cpu < 0 || cpu >= h.CPUs || gpus.StaleAmong(c, jobs, 0) {
			continue
		}
		st.held[cpu] = c.Labels[gpus.LabelHolder]
	}
	return st, nil
}

// free lists the CPUs held does not name, in order.
func (h *Host) free(held map[int]string) []int {
	var out []int
	for cpu := 0; cpu < h.CPUs; cpu++ {
		if _, ok := held[cpu]; !ok {
			out = append(out, cpu)
		}
	}
	return out
}

// poolJobs lists the containers of xrun jobs that have not ended, made or
// running, standbys among them, that hold no CPU (other than jobID's). A
// container made but not started yet counts: with Settle on the other
// side, no pool job is missed by a reservation made as it starts.
func (st state) poolJobs(jobID string) []engine.Container {
	holders := map[string]bool{}
	for _, j := range st.held {
		holders[j] = true
	}
	var out []engine.Container
	for _, c := range st.jobs {
		if j := c.Labels[contract.LabelJob]; j != jobID && !holders[j] && !c.Finished() {
			out = append(out, c)
		}
	}
	return out
}

// Settle moves container id of job jobID, made on cpuset, onto the pool as
// it is now when the job holds no CPUs: a reservation made between the
// job's Pool and its container's create listed the jobs before the
// container existed. Every reservation after the create sees the container
// (poolJobs), so the job never runs on a CPU another job holds.
func (h *Host) Settle(ctx context.Context, jobID, id, cpuset string) error {
	st, err := h.read(ctx)
	if err != nil {
		return err
	}
	held := st.held
	for _, j := range held {
		if j == jobID {
			return nil
		}
	}
	free := h.free(held)
	want := "" // all of them
	if len(held) > 0 {
		want = Set(free)
	}
	if want == cpuset || len(free) == 0 {
		return nil // where it should be, or nowhere better
	}
	set := want
	if set == "" {
		set = All(h.CPUs)
	}
	if err := h.Engine.SetCPUs(ctx, id, set); err != nil {
		return fmt.Errorf("move job %s onto the CPUs no job reserved: %w", jobID, err)
	}
	return nil
}

// confine moves the pool's jobs onto the CPUs free names.
func (h *Host) confine(ctx context.Context, pool []engine.Container, free []int) error {
	set := Set(free)
	for _, c := range pool {
		if err := h.Engine.SetCPUs(ctx, c.ID, set); err != nil && !errors.Is(err, engine.ErrNotFound) {
			return fmt.Errorf("move job %s off the reserved CPUs: %w", c.Labels[contract.LabelJob], err)
		}
	}
	return nil
}

// drop removes reservation containers this pass made.
func (h *Host) drop(ctx context.Context, ids []string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		h.Engine.Remove(rctx, id, true)
	}
}

// All is the cpuset of every CPU of a host with n: "0-(n-1)".
func All(n int) string {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return Set(cpus)
}

// Set renders CPU numbers as a cpuset: "0-3,6".
func Set(cpus []int) string {
	cpus = slices.Clone(cpus)
	sort.Ints(cpus)
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
