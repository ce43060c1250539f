package gpus

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/contract"
)

func newHost(cpus int) (*CPUHost, *enginetest.Engine) {
	f := enginetest.New()
	f.ImageIDs["img"] = "sha256:img"
	return &CPUHost{Engine: f, CPUs: cpus, Image: "img", Poll: 10 * time.Millisecond}, f
}

// running adds a running job container of job id.
func running(f *enginetest.Engine, id string) string {
	return f.Add("job-"+id, "running", map[string]string{contract.LabelJob: id}, time.Now())
}

func TestSet(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""}, {[]int{3}, "3"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{6, 0, 2, 1}, "0-2,6"}, {[]int{1, 3, 5}, "1,3,5"},
	} {
		if got := CPUSet(c.in); got != c.want {
			t.Errorf("CPUSet(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := AllCPUs(16); got != "0-15" {
		t.Errorf("AllCPUs(16) = %q", got)
	}
	if got := AllCPUs(1); got != "0" {
		t.Errorf("AllCPUs(1) = %q", got)
	}
}

func TestAcquireGivesEachJobItsOwnCPUs(t *testing.T) {
	h, f := newHost(4)
	ctx := context.Background()
	a, err := h.Acquire(ctx, "a", 2)
	if err != nil || !reflect.DeepEqual(a, []int{2, 3}) {
		t.Fatalf("job a: %v, %v; want [2 3]", a, err)
	}
	ja := running(f, "a")
	b, err := h.Acquire(ctx, "b", 2)
	if err != nil || !reflect.DeepEqual(b, []int{0, 1}) {
		t.Fatalf("job b: %v, %v; want [0 1]", b, err)
	}
	running(f, "b")
	_, err = h.Acquire(ctx, "c", 1)
	var busy *CPUsBusyError
	if !errors.As(err, &busy) {
		t.Fatalf("job c: %v, want a CPUsBusyError", err)
	}
	for _, want := range []string{"0 of 4 free", "CPU 2-3 by job a", "CPU 0-1 by job b", "--queue"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if _, err := h.Acquire(ctx, "d", 5); err == nil || !strings.Contains(err.Error(), "has 4 CPUs, the job asks for 5") {
		t.Errorf("5 of 4: %v", err)
	}
	// A job's release frees its CPUs for the next.
	if err := f.SetState(ja, "exited"); err != nil {
		t.Fatal(err)
	}
	if err := Release(ctx, f, "a"); err != nil {
		t.Fatal(err)
	}
	if c, err := h.Acquire(ctx, "c", 2); err != nil || !reflect.DeepEqual(c, []int{2, 3}) {
		t.Errorf("after a's release: %v, %v", c, err)
	}
}

func TestAcquireTakesOverAFinishedJobsCPUs(t *testing.T) {
	h, f := newHost(2)
	ctx := context.Background()
	if _, err := h.Acquire(ctx, "a", 2); err != nil {
		t.Fatal(err)
	}
	id := running(f, "a")
	if _, err := h.Acquire(ctx, "b", 1); err == nil {
		t.Fatal("b got a CPU job a holds")
	}
	if err := f.SetState(id, "exited"); err != nil {
		t.Fatal(err)
	}
	got, err := h.Acquire(ctx, "b", 2)
	if err != nil || !reflect.DeepEqual(got, []int{0, 1}) {
		t.Fatalf("after a exited: %v, %v", got, err)
	}
}

// A reservation takes no CPU a job of the pool runs on: the job keeps the
// CPUs it started with until it ends, and the reservation waits (or says
// who is in the way).
func TestReservationsLeaveThePoolsJobsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newHost(4)
		ctx := context.Background()
		if set, err := h.Pool(ctx, "p"); err != nil || set != "" {
			t.Fatalf("pool with nothing reserved: %q, %v; want all CPUs", set, err)
		}
		p := running(f, "p") // on every CPU
		_, err := h.Acquire(ctx, "a", 1)
		var busy *CPUsBusyError
		if !errors.As(err, &busy) || !strings.Contains(err.Error(), "CPU 0-3 by job p") {
			t.Fatalf("a reservation beside a pool job on every CPU: %v", err)
		}
		if err := f.SetState(p, "exited"); err != nil {
			t.Fatal(err)
		}
		if got, err := h.Acquire(ctx, "a", 2); err != nil || !reflect.DeepEqual(got, []int{2, 3}) {
			t.Fatalf("after p ended: %v, %v", got, err)
		}
		running(f, "a")
		set, err := h.Pool(ctx, "q")
		if err != nil || set != "0-1" {
			t.Fatalf("the next pool job: %q, %v; want 0-1", set, err)
		}
		q := running(f, "q")
		f.Containers[q].C.CPUSet = set
		if _, err := h.Acquire(ctx, "b", 1); !errors.As(err, &busy) || !strings.Contains(err.Error(), "CPU 0-1 by job q") {
			t.Errorf("a reservation beside q: %v", err)
		}
		if got := f.Containers[q].C.CPUSet; got != "0-1" {
			t.Errorf("the pool job was moved onto %q", got)
		}
		// Queued, it gets q's CPU once q ends.
		h.Queue = true
		go func() {
			time.Sleep(50 * time.Millisecond)
			f.SetState(q, "exited")
		}()
		if got, err := h.Acquire(ctx, "b", 1); err != nil || !reflect.DeepEqual(got, []int{1}) {
			t.Errorf("queued beside q: %v, %v; want [1]", got, err)
		}
		if cs, _ := f.List(ctx, map[string]string{LabelCPULock: ""}, true); len(cs) != 0 {
			t.Errorf("%d CPU locks left", len(cs))
		}
	})
}

// A standby that has no job yet runs nothing to time: a reservation moves
// it off the CPUs it takes, and leaves it one.
func TestReservationsMoveIdleStandbys(t *testing.T) {
	h, f := newHost(4)
	ctx := context.Background()
	sb := f.Add("xrun-e-s"+contract.StandbySuffix, "running", map[string]string{contract.LabelJob: "s", contract.LabelStandby: "k"}, time.Now())
	if got, err := h.Acquire(ctx, "a", 2); err != nil || !reflect.DeepEqual(got, []int{2, 3}) {
		t.Fatalf("beside a standby: %v, %v", got, err)
	}
	if got := f.Containers[sb].C.CPUSet; got != "0-1" {
		t.Errorf("the standby runs on %q, want 0-1", got)
	}
	running(f, "a")
	if _, err := h.Acquire(ctx, "b", 2); err == nil {
		t.Error("a reservation took the standby's last CPU")
	}
	if got, err := h.Acquire(ctx, "b", 1); err != nil || !reflect.DeepEqual(got, []int{1}) || f.Containers[sb].C.CPUSet != "0" {
		t.Errorf("b: %v, %v; the standby on %q", got, err, f.Containers[sb].C.CPUSet)
	}
}

// A lock whose client died is taken over once it is stale; one that a
// live client holds is waited for.
func TestLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newHost(2)
		ctx := context.Background()
		left, err := f.Create(ctx, engine.ContainerSpec{Name: CPULockName, Image: "img", Labels: map[string]string{LabelCPULock: "dead"}})
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if _, _, err := h.lock(short, "a"); err == nil || !strings.Contains(err.Error(), "wait for the CPU lock of host") {
			t.Fatalf("a held lock: %v", err)
		}
		if _, ok := f.Containers[left]; !ok {
			t.Fatal("a fresh lock was removed")
		}
		f.Remove(ctx, left, true)
		_, unlock, err := h.lock(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if cs, _ := f.List(ctx, map[string]string{LabelCPULock: "a"}, true); len(cs) != 1 {
			t.Fatalf("%d locks of a", len(cs))
		}
		unlock()
		if cs, _ := f.List(ctx, map[string]string{LabelCPULock: ""}, true); len(cs) != 0 {
			t.Fatalf("the lock stayed after unlock")
		}
	})
}

// A lock whose client died holding it is taken once it has stood
// lockStale, never before: a live holder lets go within lockHold, which
// bounds the work under the lock. Run on synctest's clock, the minutes
// pass at once.
func TestLockOfADeadClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newHost(2)
		ctx := context.Background()
		dead, err := f.Create(ctx, engine.ContainerSpec{Name: CPULockName, Image: "img", Labels: map[string]string{LabelCPULock: "dead"}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		type taken struct {
			ctx    context.Context
			unlock func()
			err    error
			at     time.Duration
		}
		got := make(chan taken, 1)
		go func() {
			lctx, unlock, err := h.lock(ctx, "a")
			got <- taken{lctx, unlock, err, time.Since(start)}
		}()
		time.Sleep(lockStale - time.Second)
		synctest.Wait()
		select {
		case l := <-got:
			t.Fatalf("the lock was taken after %s, before it stood %s: %v", l.at, lockStale, l.err)
		default:
		}
		if _, err := f.Inspect(ctx, dead); err != nil {
			t.Fatalf("the dead client's lock was removed before it was stale: %v", err)
		}
		l := <-got
		if l.err != nil {
			t.Fatal(l.err)
		}
		if l.at < lockStale || l.at > lockStale+time.Second {
			t.Errorf("the lock was taken after %s, want just past %s", l.at, lockStale)
		}
		if _, err := f.Inspect(ctx, dead); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("the dead client's lock is still there: %v", err)
		}
		deadline, ok := l.ctx.Deadline()
		if !ok || deadline.Sub(time.Now()) != lockHold {
			t.Errorf("the work under the lock ends %v from now (%v), want %s", deadline.Sub(time.Now()), ok, lockHold)
		}
		time.Sleep(lockHold)
		synctest.Wait()
		if l.ctx.Err() == nil {
			t.Errorf("the work under the lock goes on past %s", lockHold)
		}
		l.unlock()
		if cs, _ := f.List(ctx, map[string]string{LabelCPULock: ""}, true); len(cs) != 0 {
			t.Errorf("%d locks left after unlock", len(cs))
		}
	})
}

func TestParse(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "3": {3}, "0-3": {0, 1, 2, 3}, "0-2,6": {0, 1, 2, 6}} {
		if got, err := ParseCPUSet(in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCPUSet(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "3-1", "-1", "1-"} {
		if _, err := ParseCPUSet(bad); err == nil {
			t.Errorf("ParseCPUSet(%q) took it", bad)
		}
	}
}

func TestPoolWhenEveryCPUIsReserved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newHost(2)
		ctx := context.Background()
		if _, err := h.Acquire(ctx, "a", 2); err != nil {
			t.Fatal(err)
		}
		running(f, "a")
		_, err := h.Pool(ctx, "p")
		var busy *CPUsBusyError
		if !errors.As(err, &busy) || !strings.Contains(err.Error(), "every CPU of host") {
			t.Fatalf("pool: %v", err)
		}
		// Queued, it waits for the holder to end.
		h.Queue = true
		var lines []string
		h.Progress = func(l string) { lines = append(lines, l) }
		go func() {
			time.Sleep(50 * time.Millisecond)
			Release(ctx, f, "a")
		}()
		set, err := h.Pool(ctx, "p")
		if err != nil || set != "" {
			t.Fatalf("queued pool: %q, %v", set, err)
		}
		if len(lines) != 1 || !strings.Contains(lines[0], "queued on") {
			t.Errorf("progress: %q", lines)
		}
	})
}

// A job whose Pool came before another job's reservation, and whose
// container came after it, settles on the pool as it is; a container made
// before a reservation, started or not, keeps its CPUs.
func TestSettleAfterARaceWithAReservation(t *testing.T) {
	h, f := newHost(4)
	ctx := context.Background()
	set, err := h.Pool(ctx, "p")
	if err != nil || set != "" {
		t.Fatalf("pool: %q, %v", set, err)
	}
	if _, err := h.Acquire(ctx, "a", 2); err != nil { // p's container does not exist yet
		t.Fatal(err)
	}
	running(f, "a")
	p := f.Add("job-p", "created", map[string]string{contract.LabelJob: "p"}, time.Now())
	if err := h.Settle(ctx, "p", p, set); err != nil {
		t.Fatal(err)
	}
	if got := f.Containers[p].Spec.CPUSet; got != "0-1" {
		t.Errorf("settled on %q, want 0-1", got)
	}
	// Made, not started: the next reservation leaves its CPUs to it.
	if _, err := h.Acquire(ctx, "b", 1); err == nil || !strings.Contains(err.Error(), "CPU 0-1 by job p") {
		t.Errorf("b's reservation beside the made container: %v", err)
	}
	if got := f.Containers[p].Spec.CPUSet; got != "0-1" {
		t.Errorf("after b's reservation the made container runs on %q, want 0-1", got)
	}
	// A job that holds CPUs stays on them.
	a := f.Add("job-a2", "created", map[string]string{contract.LabelJob: "a"}, time.Now())
	if err := h.Settle(ctx, "a", a, "2-3"); err != nil || f.Containers[a].Spec.CPUSet != "" {
		t.Errorf("settle moved a job that holds CPUs: %q, %v", f.Containers[a].Spec.CPUSet, err)
	}
}
