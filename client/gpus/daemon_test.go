//go:build integration

package gpus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// TestConcurrentSubmits runs 20 submits at once against one real daemon
// (a test daemon of its own, so no other test shares its container
// names), each with its own connection as separate xrun processes would
// have, on a test inventory of 4 GPUs. Every job must get a GPU no other
// running job holds, and the job store must end with 20 intact records.
func TestConcurrentSubmits(t *testing.T) {
	d := testenv.StartDaemon(t)
	image := testenv.EnsureBusybox(t, d.Socket)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inv := gpus.Fake(d.Socket, 4) // test inventory: this machine has no GPUs
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The monitor checks, while jobs run, that no GPU index is on two
	// running job containers.
	mon, err := dial(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	stop := make(chan struct{})
	monErr := make(chan error, 1)
	var peak int
	go func() {
		defer close(monErr)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			cs, err := mon.List(ctx, map[string]string{gpus.LabelGPUIDs: ""}, false)
			if err != nil {
				continue
			}
			holder := map[string]string{}
			for _, c := range cs {
				for _, g := range strings.Split(c.Labels[gpus.LabelGPUIDs], ",") {
					if other, dup := holder[g]; dup {
						monErr <- fmt.Errorf("GPU %s held by running jobs %s and %s", g, other, c.Labels["dev.xrun.job"])
						return
					}
					holder[g] = c.Labels["dev.xrun.job"]
				}
			}
			peak = max(peak, len(cs))
		}
	}()

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	ids := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := submit(ctx, d.Socket, st, inv, image)
			if err != nil {
				errs <- err
				return
			}
			ids <- id
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	close(ids)
	for err := range errs {
		t.Error(err)
	}
	if err := <-monErr; err != nil {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("job id %s given twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct job ids, want %d", len(seen), n)
	}
	list, err := st.List()
	if err != nil {
		t.Fatalf("job store unreadable: %v", err)
	}
	if len(list) != n {
		t.Fatalf("job store holds %d jobs, want %d", len(list), n)
	}
	for _, j := range list {
		if !seen[j.ID] || j.Status != "succeeded" || j.GPUs == "" || j.ContainerID == "" {
			t.Errorf("job record %+v is not what its submit wrote", *j)
		}
	}
	if peak < 2 {
		t.Errorf("at most %d jobs ran at once: the test did not exercise concurrency", peak)
	}
	// Every reservation was freed.
	left, err := mon.List(ctx, map[string]string{gpus.LabelReservation: ""}, true)
	if err != nil || len(left) != 0 {
		t.Errorf("%d reservations left (%v)", len(left), err)
	}
	t.Logf("%d jobs, at most %d running at once on 4 test GPUs", n, peak)
}

// submit is what `xrun submit --queue --gpus 1` does about GPUs: record
// the job, reserve a GPU, create and start the container labelled with
// it, wait for it, free the GPU.
func submit(ctx context.Context, host string, st *store.Store, inv gpus.Inventory, image string) (string, error) {
	e, err := dial(host)
	if err != nil {
		return "", err
	}
	defer e.Close()
	j := &store.Job{Host: host, Experiment: "concurrency", Mode: "gpu", Status: store.StatusCreated}
	if err := st.Create(j); err != nil {
		return "", err
	}
	a := &gpus.Assigner{Engine: e, Inventory: inv, Image: image, Queue: true, Poll: 200 * time.Millisecond}
	got, err := a.Acquire(ctx, j.ID, gpus.Request{Count: 1})
	if err != nil {
		return "", err
	}
	defer gpus.Release(context.WithoutCancel(ctx), e, j.ID)
	j.GPUs = gpus.Indices(got)
	id, err := e.Create(ctx, engine.ContainerSpec{
		Name:  "xrun-concurrency-" + j.ID,
		Image: image,
		Cmd:   []string{"sleep", "1"},
		Labels: map[string]string{
			"dev.xrun.job":   j.ID,
			gpus.LabelGPUIDs: j.GPUs,
			"dev.xrun.test":  "concurrency",
			"dev.xrun.gpus":  "1",
			"dev.xrun.mode":  "gpu",
		},
		NetworkDisabled: true,
	})
	if err != nil {
		return "", err
	}
	defer e.Remove(context.WithoutCancel(ctx), id, true)
	j.ContainerID = id
	wait := e.Wait(ctx, id, true)
	if err := e.Start(ctx, id); err != nil {
		return "", err
	}
	j.Status = store.StatusRunning
	if err := st.Save(j); err != nil {
		return "", err
	}
	if r := <-wait; r.Err != nil || r.ExitCode != 0 {
		return "", fmt.Errorf("job %s: exit %d %v", j.ID, r.ExitCode, r.Err)
	}
	j.Status = "succeeded"
	return j.ID, st.Save(j)
}

// TestDiscoverWithoutGPURuntime: on a host without the NVIDIA runtime the
// inventory is a clear error, not an empty list.
func TestDiscoverWithoutGPURuntime(t *testing.T) {
	testenv.RequireDocker(t)
	image := testenv.EnsureBusybox(t, testenv.LocalHost)
	e, err := dial(testenv.LocalHost)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	info, err := e.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	testenv.NoNVIDIARuntime(t, info.NvidiaRuntime)
	_, err = gpus.Discover(context.Background(), e, image)
	if err == nil || !strings.Contains(err.Error(), "list the GPUs of host") {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(err, engine.ErrNoGPURuntime) && !strings.Contains(err.Error(), "nvidia") {
		t.Fatalf("the error does not say what is missing: %v", err)
	}
	t.Log(err)
}

// dial makes an engine for a daemon address, the way xrun's hosts package does.
func dial(host string) (*engine.Docker, error) {
	cli, err := connect.NewClient(connect.DockerHost{Host: host})
	if err != nil {
		return nil, err
	}
	return engine.FromClient(host, cli), nil
}
