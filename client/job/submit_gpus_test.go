package job

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
)

// 20 attached submits with Queue of one GPU each at once, each with its own
// Manager as separate xrun processes would be, on one host with the test
// inventory of 4 GPUs: 20 jobs with distinct ids, none lost, no GPU on two
// running jobs, every reservation freed.
func TestConcurrentSubmitsShareNoGPU(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	f := e.fake
	var overlaps []string
	f.Behave = func(s engine.ContainerSpec) enginetest.Run {
		// Start holds f.mu: the running set is a consistent snapshot.
		// The GPUs a container gets are its device request's; a standby
		// uses none until it runs its job (Ran).
		ids := func(s engine.ContainerSpec) []string {
			if s.GPUs == nil || len(s.GPUs.IDs) == 0 {
				return []string{""}
			}
			return s.GPUs.IDs
		}
		held := map[string]string{}
		for _, c := range f.Containers {
			if c.C.State == "running" && c.Ran && c.C.Labels[contract.LabelJob] != s.Labels[contract.LabelJob] {
				for _, g := range ids(c.Spec) {
					held[g] = c.C.Labels[contract.LabelJob]
				}
			}
		}
		for _, g := range ids(s) {
			if other, ok := held[g]; ok || g == "" {
				overlaps = append(overlaps, fmt.Sprintf("job %s started on GPU %q held by %s", s.Labels[contract.LabelJob], g, other))
			}
		}
		go func() {
			time.Sleep(20 * time.Millisecond)
			f.Exit(s.Name, 0)
		}()
		return enginetest.Run{Hang: true, Files: map[string]string{"results.json": enginetest.ResultsJSON("my-kernel", result.StatusSucceeded)}}
	}
	e.env[gpus.FakeEnv] = "4"
	const n = 20
	managers := make([]*Manager, n)
	logs := make([]*syncBuffer, n)
	for i := range managers {
		managers[i], logs[i] = e.manager(t), &syncBuffer{}
		managers[i].Err, managers[i].Backends.KubeLog = logs[i], logs[i]
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, m := range managers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := Request(Args{Dir: dir, Queue: true, GPUs: "1", Network: "default"}, e.getenv, logs[i])
			if err == nil {
				var j *store.Job
				j, err = m.Submit(context.Background(), r)
				if err == nil {
					err = Outcome(j)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("submit %d: %v: %s", i, err, logs[i])
		}
	}
	for _, o := range overlaps {
		t.Error(o)
	}
	list := e.jobs(t)
	ids := map[string]bool{}
	for _, j := range list {
		ids[j.ID] = true
		if j.Status != result.StatusSucceeded || j.GPUs == "" {
			t.Errorf("job %s: status %s, GPUs %q", j.ID, j.Status, j.GPUs)
		}
	}
	if len(list) != n || len(ids) != n {
		t.Fatalf("%d records, %d distinct ids, want %d", len(list), len(ids), n)
	}
	if left, _ := f.List(context.Background(), map[string]string{gpus.LabelReservation: ""}, true); len(left) != 0 {
		t.Fatalf("%d GPU reservations left", len(left))
	}
}

// Without Queue, a job whose GPUs are held fails with who holds them.
func TestSubmitBusyGPUs(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = func(engine.ContainerSpec) enginetest.Run { return enginetest.Run{Hang: true} }
	e.env[gpus.FakeEnv] = "2"
	first, err := e.submit(context.Background(), t, dir, Args{Detach: true, GPUs: "all"})
	if err != nil {
		t.Fatalf("first submit: %v: %s", err, e.err)
	}
	_, err = e.submit(context.Background(), t, dir, Args{Detach: true, GPUs: "1"})
	if err == nil || !strings.Contains(err.Error(), "cannot give this job 1 GPU now (0 free; held: GPU 0 by job "+first.ID+", GPU 1 by job "+first.ID+"): wait for them with --queue") {
		t.Fatalf("second submit: %v", err)
	}
}

// resources.gpu_type reaches the GPU assignment; a host without such a GPU
// is refused with what it has, before anything runs.
func TestSubmitGPUType(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	editSpec(t, dir, "  # gpu_type: H100", "  gpu_type: H100  ")
	e.fake.Behave = enginetest.Succeed("my-kernel")
	e.env[gpus.FakeEnv] = "2"
	_, err := e.submit(context.Background(), t, dir, Args{})
	if err == nil || !strings.Contains(err.Error(), "has no H100 GPU (resources.gpu_type; it has 2x test GPU") {
		t.Fatalf("submit: %v", err)
	}
	if len(e.fake.Containers) != 0 {
		t.Errorf("%d containers made for a job that cannot run", len(e.fake.Containers))
	}
}

// A detached job's GPUs (and CPUs) are freed when another process records
// its end: xrun wait, status or ps, not only the next submit's clean-up.
func TestDetachedJobReleasesItsGPUsWhenItsEndIsRecorded(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = enginetest.Succeed("my-kernel")
	e.env[gpus.FakeEnv] = "2"
	ctx := context.Background()
	j, err := e.submit(ctx, t, dir, Args{Detach: true, GPUs: "1"})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	held, _ := e.fake.List(ctx, map[string]string{gpus.LabelHolder: j.ID}, true)
	if len(held) == 0 {
		t.Fatal("the detached job holds no reservation")
	}
	m := e.manager(t)
	rec, err := m.Store.Load(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Wait(ctx, rec); err != nil || rec.Status != result.StatusSucceeded {
		t.Fatalf("wait: %v, status %s", err, rec.Status)
	}
	if left, _ := e.fake.List(ctx, map[string]string{gpus.LabelHolder: j.ID}, true); len(left) != 0 {
		t.Errorf("%d reservations of the ended job left", len(left))
	}
}
