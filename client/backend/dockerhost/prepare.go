package dockerhost

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/images"
)

var (
	_ backend.Preparer = (*Backend)(nil)
	_ backend.Releaser = (*Backend)(nil)
)

// Release frees the GPUs and CPUs job j holds on the host (its reservation
// containers), once its end is recorded.
func (b *Backend) Release(ctx context.Context, j *store.Job) error {
	return gpus.Release(ctx, b.Engine, j.ID)
}

// Prepare gives the job GPUs of the host that no running xrun job holds
// (waiting for them with r.Queue): the reservation names their indices,
// which the job's device request then asks for. It gives the job CPUs
// too (client/gpus, CPUHost): r.CPUs of them, or by default a GPU job its GPUs'
// share of the host's, for it alone; a CPU job that asks for none runs on
// the CPUs no job reserved. Release frees both. A CPU job's GPU model is
// "cpu".
func (b *Backend) Prepare(ctx context.Context, r backend.PrepareRequest) (backend.Reservation, error) {
	e := b.Engine
	res := backend.NoReservation(r.GPUs)
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := gpus.Release(rctx, e, r.Job.ID); err != nil {
			fmt.Fprintf(r.Log, "warning: %v (the next submit reclaims them)\n", err)
		}
	}
	share := 0
	if r.GPUs != nil {
		// A configured test inventory (gpus: N on a named host) is honoured
		// like XRUN_FAKE_GPUS; see docs/hosts.md.
		inv, err := gpus.Lookup(ctx, e, r.Image, b.FakeGPUs, gpus.DefaultCache(b.Getenv), b.Getenv)
		if err != nil {
			return backend.Reservation{}, err
		}
		if err := checkDriver(ctx, e, r.Image, inv); err != nil {
			return backend.Reservation{}, err
		}
		as := &gpus.Assigner{
			Engine: e, Inventory: inv, Image: r.Image, Queue: r.Queue,
			Progress: func(line string) { fmt.Fprintln(r.Log, line) },
		}
		got, err := as.Acquire(ctx, r.Job.ID, gpus.Request{Count: r.GPUs.Count, IDs: r.GPUs.IDs, Type: r.GPUType})
		if err != nil {
			return backend.Reservation{}, err
		}
		// The device request names the assigned indices, as nvidia-smi
		// numbered them on this host when the inventory was taken.
		ids := gpus.Indices(got)
		fmt.Fprintf(r.Log, "job %s gets GPU %s (%s) on %s\n", r.Job.ID, ids, got[0].Name, e.Host())
		res = backend.Reservation{Release: release, GPUModel: got[0].Name, GPUs: &backend.GPUs{IDs: strings.Split(ids, ",")}, GPUIDs: ids}
		share = len(got) * max(1, hostCPUs(ctx, e)/len(inv.GPUs))
	}
	set, err := b.cpus(ctx, r, share)
	if err != nil {
		if res.GPUs != nil {
			release()
		}
		return backend.Reservation{}, err
	}
	res.CPUSet, res.Release = set, release
	return res, nil
}

// cpus gives the job r.CPUs of the host's CPUs, else share of them (a GPU
// job's), else a place on the CPUs no job reserved; it returns their
// cpuset ("": all of them). A host whose daemon does not say how many
// CPUs it has gets all of them.
func (b *Backend) cpus(ctx context.Context, r backend.PrepareRequest, share int) (string, error) {
	n := hostCPUs(ctx, b.Engine)
	if n <= 0 {
		return "", nil
	}
	h := &gpus.CPUHost{Engine: b.Engine, CPUs: n, Image: r.Image, Queue: r.Queue,
		Progress: func(line string) { fmt.Fprintln(r.Log, line) }}
	var got []int
	var err error
	if r.CPUs > 0 {
		if got, err = h.Acquire(ctx, r.Job.ID, r.CPUs); err != nil {
			return "", err
		}
	} else {
		// A GPU job's share is what it gets if free, or as much of it as
		// is free now: it waits for its GPUs, never for CPUs it did not
		// ask for. It leaves the host's last free CPU to the pool, so that
		// a CPU job can still run beside it.
		sh := *h
		sh.Keep = 1
		if got, err = sh.Share(ctx, r.Job.ID, min(share, n)); err != nil {
			return "", err
		}
		if got == nil {
			return h.Pool(ctx, r.Job.ID)
		}
	}
	set := gpus.CPUSet(got)
	fmt.Fprintf(r.Log, "job %s gets CPU %s of %d on %s\n", r.Job.ID, set, n, b.Engine.Host())
	return set, nil
}

// settle moves container id of a job that holds no CPUs, made from spec s
// and not started yet, onto the pool as it is now (gpus.CPUHost.Settle): a
// reservation may have come between the job's Prepare and its container.
// With --queue (s.WaitForNode) it waits for a CPU when every one was
// reserved meanwhile.
func (b *Backend) settle(ctx context.Context, jobID, id string, s backend.Spec) error {
	n := hostCPUs(ctx, b.Engine)
	if n <= 0 {
		return nil
	}
	return (&gpus.CPUHost{Engine: b.Engine, CPUs: n, Image: s.Image, Queue: s.WaitForNode}).Settle(ctx, jobID, id, s.CPUSet)
}

// hostCPUs is how many CPUs the Docker host has (0: its daemon did not say).
func hostCPUs(ctx context.Context, e engine.Engine) int {
	info, err := e.Info(ctx)
	if err != nil {
		return 0
	}
	return info.CPUs
}

// checkDriver refuses, before anything runs, a job image built for a CUDA
// that the host's NVIDIA driver cannot run (the image's dev.xrun.cuda
// label, else the CUDA_VERSION that NVIDIA's CUDA images set).
func checkDriver(ctx context.Context, e engine.Engine, ref string, inv gpus.Inventory) error {
	cfg, err := e.ImageConfig(ctx, ref)
	if err != nil {
		return err
	}
	cuda := cfg.Labels[images.LabelCUDA]
	if cuda == "" {
		cuda = cfg.Getenv("CUDA_VERSION")
	}
	if err := images.CheckDriver(cuda, inv.Driver()); err != nil {
		return fmt.Errorf("host %s cannot run %s: %w", e.Host(), ref, err)
	}
	return nil
}
