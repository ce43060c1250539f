//go:build integration

package gpus_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/testenv"
)

const testLabel = "dev.xrun.test"

// TestConcurrentReservations runs 20 submits of `--cpus 1 --queue` at once
// against one real daemon (a test daemon of its own, so no other test
// shares its container names), each with its own connection as separate
// xrun processes would have, beside a job of the pool that started first
// on every CPU. No two running jobs may hold one CPU, no reserved CPU may
// be one the pool job runs on, the pool job must keep its CPUs, and every
// submit must get its CPU in turn and run.
func TestConcurrentReservations(t *testing.T) {
	d := testenv.StartDaemon(t)
	image := testenv.EnsureBusybox(t, d.Socket)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mon, err := dial(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	info, err := mon.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := info.CPUs

	// The pool job: no reservation, so every CPU, for 3 s.
	h := &gpus.CPUHost{Engine: mon, CPUs: n, Image: image}
	set, err := h.Pool(ctx, "pool")
	if err != nil || set != "" {
		t.Fatalf("the pool job gets %q, %v; want every CPU", set, err)
	}
	pool, err := runOnCPUs(ctx, mon, image, "pool", set, "3")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Settle(ctx, "pool", pool, set); err != nil {
		t.Fatal(err)
	}
	poolDone := mon.Wait(ctx, pool, true)
	if err := mon.Start(ctx, pool); err != nil {
		t.Fatal(err)
	}

	// The monitor checks, while jobs run, what each running container may
	// run on against the others'.
	stop := make(chan struct{})
	monErr := make(chan error, 1)
	var peak, looks int
	go func() {
		defer close(monErr)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if err := checkCPUs(ctx, mon, n, &peak); err != nil {
				monErr <- err
				return
			}
			looks++
		}
	}()

	const jobs = 20
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := reserveCPUs(ctx, d.Socket, image, "job"+strconv.Itoa(i), n); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-monErr; err != nil {
		t.Error(err)
	}
	if r := <-poolDone; r.Err != nil || r.ExitCode != 0 {
		t.Errorf("the pool job: exit %d %v", r.ExitCode, r.Err)
	}
	if c, err := mon.Inspect(ctx, pool); err != nil || c.CPUSet != "" {
		t.Errorf("the pool job ended on CPUs %q (%v), want every CPU, as it started", c.CPUSet, err)
	}
	mon.Remove(context.WithoutCancel(ctx), pool, true)
	if peak < 2 && n >= 2 {
		t.Errorf("at most %d reserved jobs ran at once on %d CPUs: the test did not exercise concurrency", peak, n)
	}
	for _, l := range []string{gpus.LabelCPUReservation, gpus.LabelCPULock} {
		if left, err := mon.List(ctx, map[string]string{l: ""}, true); err != nil || len(left) != 0 {
			t.Errorf("%d containers labelled %s left (%v)", len(left), l, err)
		}
	}
	t.Logf("%d jobs of 1 CPU each on %d CPUs, at most %d running at once (%d looks)", jobs, n, peak, looks)
}

// submit is what `xrun submit --cpus 1 --queue` does about CPUs: reserve
// one, make and start a container on it, wait for it, free the CPU and
// remove the container.
func reserveCPUs(ctx context.Context, host, image, id string, n int) error {
	e, err := dial(host)
	if err != nil {
		return err
	}
	defer e.Close()
	h := &gpus.CPUHost{Engine: e, CPUs: n, Image: image, Queue: true, Poll: 200 * time.Millisecond}
	got, err := h.Acquire(ctx, id, 1)
	if err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	defer gpus.Release(context.WithoutCancel(ctx), e, id)
	c, err := runOnCPUs(ctx, e, image, id, gpus.CPUSet(got), "1")
	if err != nil {
		return err
	}
	defer e.Remove(context.WithoutCancel(ctx), c, true)
	wait := e.Wait(ctx, c, true)
	if err := e.Start(ctx, c); err != nil {
		return fmt.Errorf("job %s: %w", id, err)
	}
	if r := <-wait; r.Err != nil || r.ExitCode != 0 {
		return fmt.Errorf("job %s: exit %d %v", id, r.ExitCode, r.Err)
	}
	return nil
}

// run makes the container of job id on cpuset, to sleep secs.
func runOnCPUs(ctx context.Context, e engine.Engine, image, id, cpuset, secs string) (string, error) {
	c, err := e.Create(ctx, engine.ContainerSpec{
		Name: "xrun-cores-" + id, Image: image, Cmd: []string{"sleep", secs},
		Labels:          map[string]string{contract.LabelJob: id, testLabel: "cores"},
		CPUSet:          cpuset,
		NetworkDisabled: true,
	})
	if err != nil {
		return "", fmt.Errorf("job %s: %w", id, err)
	}
	return c, nil
}

// check looks at the running test containers once: a reserved job's CPUs
// are held by its own reservations, no two jobs hold one CPU, and none is
// one the pool job runs on.
func checkCPUs(ctx context.Context, e engine.Engine, n int, peak *int) error {
	res, err := e.List(ctx, map[string]string{gpus.LabelCPUReservation: ""}, true)
	if err != nil {
		return nil // the daemon is busy; the next look counts
	}
	holder := map[string]string{}
	for _, r := range res {
		holder[r.Labels[gpus.LabelCPUReservation]] = r.Labels[gpus.LabelHolder]
	}
	cs, err := e.List(ctx, map[string]string{testLabel: "cores"}, false)
	if err != nil {
		return nil
	}
	on := map[int]string{} // CPU -> the reserved job running on it
	var poolCPUs []int
	reserved := 0
	for _, c := range cs {
		full, err := e.Inspect(ctx, c.ID)
		if err != nil || full.State != "running" {
			continue // ended since the list
		}
		job := c.Labels[contract.LabelJob]
		if job == "pool" {
			if full.CPUSet != "" {
				return fmt.Errorf("the pool job was moved onto CPUs %q while it ran", full.CPUSet)
			}
			for cpu := range n {
				poolCPUs = append(poolCPUs, cpu)
			}
			continue
		}
		reserved++
		cpus, err := gpus.ParseCPUSet(full.CPUSet)
		if err != nil || len(cpus) != 1 {
			return fmt.Errorf("job %s runs on %q, want one CPU", job, full.CPUSet)
		}
		for _, cpu := range cpus {
			if other, dup := on[cpu]; dup {
				return fmt.Errorf("CPU %d held by running jobs %s and %s", cpu, other, job)
			}
			on[cpu] = job
			if h := holder[strconv.Itoa(cpu)]; h != job {
				return fmt.Errorf("job %s runs on CPU %d, which job %q holds", job, cpu, h)
			}
		}
	}
	for _, cpu := range poolCPUs {
		if j, ok := on[cpu]; ok {
			return fmt.Errorf("job %s holds CPU %d while the pool job runs on it", j, cpu)
		}
	}
	*peak = max(*peak, reserved)
	return nil
}
