// CPUs of a job's own: a Docker host's jobs get CPUs the way they get
// GPUs (assign.go), so that one owner's job cannot slow down
// another's: a job that reserves CPUs (resources.cpus, or a GPU job's share
// of the host) is the only xrun job that runs on them. Every other job runs
// on the pool, the CPUs that no reservation held when its container was
// made, and stays on them: a reservation takes only CPUs that no running
// job is on, so a job's CPUs never change under it (a standby that has no
// job yet is the one container a reservation moves).
//
// A reservation is a container named after the CPU (xrun-cpu-N), never
// started, labelled with its job (Reserve); Release frees a
// job's CPUs with its GPUs, and a reservation whose job has finished is
// taken over by the next job that wants the CPU. Every reservation and
// every move is made under one lock per host, the container CPULockName, so
// that two clients never hand out the same CPU or miss each other's jobs.

package gpus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/contract"
)

// LabelCPUReservation marks a CPU's reservation container; its value is the
// CPU's number.
const LabelCPUReservation = "dev.xrun.cpu-reservation"

// CPUReservationName is the container name that reserves CPU cpu on a host.
func CPUReservationName(cpu int) string { return "xrun-cpu-" + strconv.Itoa(cpu) }

// CPUHost hands out the CPUs of one Docker host.
type CPUHost struct {
	Engine engine.Engine
	// CPUs is how many the host has (its daemon's NCPU).
	CPUs int
	// Image is an image on the host to create reservation containers
	// from (they are never started).
	Image string
	// Queue waits for CPUs other jobs hold instead of failing with a
	// *CPUsBusyError.
	Queue bool
	// Keep is how many of the CPUs it may take a reservation must leave
	// unreserved (at least one while a standby with no job yet waits).
	Keep int
	// Poll is the wait between tries while queued (default 1 s, jittered).
	Poll time.Duration
	// Progress, when set, gets a line when a queued job starts waiting
	// and whenever what it waits for changes.
	Progress func(string)
}

// CPUsBusyError says that the CPUs a job needs are held by other jobs.
type CPUsBusyError struct {
	Host string
	// Want is how many CPUs the job asked for (0: a place in the pool);
	// Free how many no job holds, of which the job could have had
	// available (less those kept for the pool).
	Want, Free, CPUs int
	available        int
	// Holders maps a held CPU to the job that holds it.
	Holders map[int]string
}

func (e *CPUsBusyError) Error() string {
	if e.Want == 0 {
		return fmt.Sprintf("every CPU of host %s is reserved by other jobs (%s): wait for one with --queue", e.Host, e.held())
	}
	return fmt.Sprintf("host %s cannot give this job %d CPUs now (%d of %d free; held: %s): wait for them with --queue, or ask for fewer (resources.cpus)",
		e.Host, e.Want, e.Free, e.CPUs, e.held())
}

func (e *CPUsBusyError) held() string {
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
		s = append(s, fmt.Sprintf("CPU %s by job %s", CPUSet(byJob[j]), j))
	}
	return strings.Join(s, ", ")
}

// Acquire reserves n CPUs of the host for jobID, the highest free numbers
// first, of those that no job holds and no job of the pool runs on (a
// standby with no job yet is moved off them). It returns the CPUs in
// order.
func (h *CPUHost) Acquire(ctx context.Context, jobID string, n int) ([]int, error) {
	if n > h.CPUs {
		return nil, fmt.Errorf("host %s has %d CPUs, the job asks for %d (resources.cpus): ask for fewer or pick a bigger host", h.Engine.Host(), h.CPUs, n)
	}
	return h.wait(ctx, n, func() ([]int, *CPUsBusyError, error) { return h.try(ctx, jobID, n) })
}

// Share reserves up to n CPUs for jobID, as many as are free now (less
// Keep and the pool's), without waiting; none when none is free.
func (h *CPUHost) Share(ctx context.Context, jobID string, n int) ([]int, error) {
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
// CPU is reserved it waits for one with Queue, else it is a *CPUsBusyError.
func (h *CPUHost) Pool(ctx context.Context, jobID string) (string, error) {
	var set string
	_, err := h.wait(ctx, 0, func() ([]int, *CPUsBusyError, error) {
		st, err := h.read(ctx)
		if err != nil {
			return nil, nil, err
		}
		held := st.held
		free := h.free(held)
		if len(free) == 0 {
			return nil, &CPUsBusyError{Host: h.Engine.Host(), CPUs: h.CPUs, Holders: held}, nil
		}
		if len(held) > 0 {
			set = CPUSet(free)
		}
		return free, nil, nil
	})
	return set, err
}

// wait runs try until it gets CPUs, waiting between tries with Queue.
func (h *CPUHost) wait(ctx context.Context, n int, try func() ([]int, *CPUsBusyError, error)) ([]int, error) {
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
// and says who holds the rest. It looks at the host once without the lock,
// since most passes of a queued job find nothing free and need not hold
// every other client up to learn it, and again under the lock to reserve.
func (h *CPUHost) try(ctx context.Context, jobID string, n int) ([]int, *CPUsBusyError, error) {
	st, err := h.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, busy, ok := h.avail(st, pool{}, n); !ok {
		return nil, busy, nil
	}
	lctx, unlock, err := h.lock(ctx, jobID)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	if st, err = h.read(lctx); err != nil {
		return nil, nil, err
	}
	p, err := h.pool(lctx, st, jobID)
	if err != nil {
		return nil, nil, err
	}
	avail, busy, ok := h.avail(st, p, n)
	if !ok {
		return nil, busy, nil
	}
	var got []int
	var made []string
	for _, cpu := range avail {
		if len(got) == n {
			break
		}
		id, holder, err := h.reserve(lctx, jobID, cpu)
		if err != nil {
			h.drop(ctx, made)
			return nil, nil, err
		}
		if holder != "" {
			busy.Holders[cpu] = holder
			continue
		}
		got, made = append(got, cpu), append(made, id)
	}
	if len(got) < n {
		h.drop(ctx, made)
		busy.Free, busy.available = busy.Free-len(got), 0
		return nil, busy, nil
	}
	sort.Ints(got)
	if err := h.confine(lctx, p.idle, h.free(withJob(st.held, got, jobID))); err != nil {
		h.drop(ctx, made)
		return nil, nil, err
	}
	return got, nil, nil
}

// avail lists the CPUs a reservation of n may take, highest first: those
// no job holds and no job of the pool runs on, less the ones kept
// unreserved (Keep, and one for the standbys p moves off them), and
// whether there are n of them; busy says who holds the rest.
func (h *CPUHost) avail(st state, p pool, n int) (avail []int, busy *CPUsBusyError, ok bool) {
	holders := maps.Clone(st.held)
	for cpu, j := range p.busy {
		if _, ok := holders[cpu]; !ok {
			holders[cpu] = j
		}
	}
	free := h.free(holders)
	keep := h.Keep
	if len(p.idle) > 0 {
		keep = max(keep, 1)
	}
	busy = &CPUsBusyError{Host: h.Engine.Host(), Want: n, Free: len(free), CPUs: h.CPUs, Holders: holders, available: max(len(free)-keep, 0)}
	if len(free)-keep < n {
		return nil, busy, false
	}
	slices.Reverse(free)
	return free[:len(free)-keep], busy, true
}

// reserve makes cpu's reservation for jobID (Reserve). Under the lock
// no other xrun reserves, so a name still in use is a reservation on its
// way out (a job's release in progress): it is tried again for a while
// rather than given up.
func (h *CPUHost) reserve(ctx context.Context, jobID string, cpu int) (string, string, error) {
	for attempt := 0; ; attempt++ {
		id, holder, err := Reserve(ctx, h.Engine, h.Image, 0, jobID, CPUReservationName(cpu), "CPU "+strconv.Itoa(cpu),
			map[string]string{LabelCPUReservation: strconv.Itoa(cpu)})
		if err != nil || holder == "" || attempt == 10 {
			return id, holder, err
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
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

// CPULockName is the container whose existence is a host's CPU lock: the
// client that made it alone reserves CPUs and moves containers onto them
// until it removes it. The daemon's container names are unique, so of any
// number of clients, on any machines, one at a time makes it.
const CPULockName = "xrun-cpu-lock"

// LabelCPULock marks the lock container; its value is the job whose client
// holds it.
const LabelCPULock = "dev.xrun.cpu-lock"

// lockHold bounds the work done under the lock; lockStale is how long a
// client waits on one lock container before it takes it for a dead
// client's (killed while it held the lock) and removes it. It is longer
// than lockHold, so a live holder has always let go before.
const (
	lockHold  = time.Minute
	lockStale = 3 * time.Minute
)

// lock takes the host's CPU lock for jobID, waiting while another client
// holds it. It returns a context for the work under the lock (it ends
// after lockHold) and the function that lets go.
func (h *CPUHost) lock(ctx context.Context, jobID string) (context.Context, func(), error) {
	var seen string
	var since time.Time
	for {
		// Not cancelled with ctx: a create cut off once it reached the
		// daemon would leave a lock no one removes until it is stale.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		id, err := h.Engine.Create(cctx, engine.ContainerSpec{
			Name: CPULockName, Image: h.Image,
			// Never started: the entrypoint only has to be non-empty.
			Entrypoint: []string{"xrun-reservation"}, Labels: map[string]string{LabelCPULock: jobID}, NetworkDisabled: true,
		})
		cancel()
		if err == nil {
			lctx, cancel := context.WithTimeout(ctx, lockHold)
			return lctx, func() { cancel(); h.drop(ctx, []string{id}) }, nil
		}
		if !isConflict(err) {
			return nil, nil, fmt.Errorf("lock the CPUs of host %s: %w", h.Engine.Host(), err)
		}
		c, err := h.Engine.Inspect(ctx, CPULockName)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			// Let go of just now: the next create may get it.
		case err != nil:
			return nil, nil, fmt.Errorf("look at the CPU lock of host %s: %w", h.Engine.Host(), err)
		case c.ID != seen:
			seen, since = c.ID, time.Now()
		case time.Since(since) > lockStale:
			// By its id, so that a lock made meanwhile stays.
			if err := h.Engine.Remove(ctx, c.ID, true); err != nil && !gone(err) {
				return nil, nil, fmt.Errorf("remove the CPU lock that job %s's client left on host %s %s ago: %w", c.Labels[LabelCPULock], h.Engine.Host(), lockStale, err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("wait for the CPU lock of host %s: %w", h.Engine.Host(), ctx.Err())
		case <-time.After(20*time.Millisecond + rand.N(80*time.Millisecond)):
		}
	}
}

// isConflict recognises "the container name is already in use".

// gone says that err is about a container that no longer exists or is
// being removed: what a job that ends as it is looked at gives.
func gone(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return errors.Is(err, engine.ErrNotFound) || strings.Contains(msg, "marked for removal") ||
		strings.Contains(msg, "already in progress") || strings.Contains(msg, "is dead")
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
func (h *CPUHost) read(ctx context.Context) (state, error) {
	res, err := h.Engine.List(ctx, map[string]string{LabelCPUReservation: ""}, true)
	if err != nil {
		return state{}, fmt.Errorf("list the CPUs reserved on host %s: %w", h.Engine.Host(), err)
	}
	jobs, err := h.Engine.List(ctx, map[string]string{contract.LabelJob: ""}, true)
	if err != nil {
		return state{}, fmt.Errorf("list the jobs on host %s: %w", h.Engine.Host(), err)
	}
	st := state{held: map[int]string{}, jobs: jobs}
	for _, c := range res {
		cpu, err := strconv.Atoi(c.Labels[LabelCPUReservation])
		if err != nil || cpu < 0 || cpu >= h.CPUs || StaleAmong(c, jobs, 0) {
			continue
		}
		st.held[cpu] = c.Labels[LabelHolder]
	}
	return st, nil
}

// free lists the CPUs held does not name, in order.
func (h *CPUHost) free(held map[int]string) []int {
	var out []int
	for cpu := 0; cpu < h.CPUs; cpu++ {
		if _, ok := held[cpu]; !ok {
			out = append(out, cpu)
		}
	}
	return out
}

// pool is what the jobs that hold no CPUs do with the host's: busy maps
// each CPU a job of the pool is on (made or running) to one such job, and
// no reservation takes it; idle are the standbys that have no job yet,
// which move off the CPUs a reservation takes.
type pool struct {
	busy map[int]string
	idle []engine.Container
}

// pool inspects the containers of the pool's jobs for their CPUs.
func (h *CPUHost) pool(ctx context.Context, st state, jobID string) (pool, error) {
	p := pool{busy: map[int]string{}}
	for _, c := range st.poolJobs(jobID) {
		job := c.Labels[contract.LabelJob]
		if contract.IdleStandby(strings.TrimPrefix(c.Name, "/"), c.Labels) {
			p.idle = append(p.idle, c)
			continue
		}
		full, err := h.Engine.Inspect(ctx, c.ID)
		if gone(err) || err == nil && (full.Finished() || full.State == "removing") {
			continue
		}
		if err != nil {
			return pool{}, fmt.Errorf("look at the CPUs of job %s on host %s: %w", job, h.Engine.Host(), err)
		}
		cpus, err := ParseCPUSet(full.CPUSet)
		if err != nil || full.CPUSet == "" {
			cpus = h.free(nil) // every CPU
		}
		for _, cpu := range cpus {
			if _, ok := p.busy[cpu]; !ok {
				p.busy[cpu] = job
			}
		}
	}
	return p, nil
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

// Settle moves container id of job jobID, made on cpuset and not started
// yet, onto the pool as it is now when the job holds no CPUs: a
// reservation made between the job's Pool and its container's create
// listed the jobs before the container existed. Every reservation after
// the create sees the container (poolJobs) and leaves its CPUs alone, so
// the job never runs on a CPU another job holds, nor moves once it runs.
// When every CPU was reserved meanwhile it waits for one with Queue, else
// it is a *CPUsBusyError.
func (h *CPUHost) Settle(ctx context.Context, jobID, id, cpuset string) error {
	_, err := h.wait(ctx, 0, func() ([]int, *CPUsBusyError, error) {
		lctx, unlock, err := h.lock(ctx, jobID)
		if err != nil {
			return nil, nil, err
		}
		defer unlock()
		st, err := h.read(lctx)
		if err != nil {
			return nil, nil, err
		}
		held := st.held
		for _, j := range held {
			if j == jobID {
				return nil, nil, nil
			}
		}
		free := h.free(held)
		if len(free) == 0 {
			return nil, &CPUsBusyError{Host: h.Engine.Host(), CPUs: h.CPUs, Holders: held}, nil
		}
		want := "" // all of them
		if len(held) > 0 {
			want = CPUSet(free)
		}
		if want == cpuset {
			return nil, nil, nil
		}
		set := want
		if set == "" {
			set = AllCPUs(h.CPUs)
		}
		if err := h.Engine.SetCPUs(lctx, id, set); err != nil {
			return nil, nil, fmt.Errorf("move job %s onto the CPUs no job reserved: %w", jobID, err)
		}
		return nil, nil, nil
	})
	return err
}

// confine moves the standbys that have no job yet onto the CPUs free
// names. One that is going away meanwhile (a prune, a newer standby) is
// passed over: it will run nothing.
func (h *CPUHost) confine(ctx context.Context, idle []engine.Container, free []int) error {
	set := CPUSet(free)
	for _, c := range idle {
		if err := h.Engine.SetCPUs(ctx, c.ID, set); err != nil && !gone(err) {
			return fmt.Errorf("move the standby of job %s off the reserved CPUs: %w", c.Labels[contract.LabelJob], err)
		}
	}
	return nil
}

// drop removes reservation containers this pass made.
func (h *CPUHost) drop(ctx context.Context, ids []string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, id := range ids {
		h.Engine.Remove(rctx, id, true)
	}
}

// AllCPUs is the cpuset of every CPU of a host with n: "0-(n-1)".
func AllCPUs(n int) string {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return CPUSet(cpus)
}

// CPUSet renders CPU numbers as a cpuset: "0-3,6".
func CPUSet(cpus []int) string {
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

// ParseCPUSet reads a cpuset ("0-3,6") as CPU numbers.
func ParseCPUSet(set string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(set, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("cpuset %q: %q is no CPU number or range", set, part)
		}
		for cpu := a; cpu <= b; cpu++ {
			out = append(out, cpu)
		}
	}
	return out, nil
}
