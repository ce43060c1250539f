package dockerhost

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/images"
)

var _ backend.Preparer = (*Backend)(nil)

// Prepare gives the job GPUs of the host that no running xrun job holds
// (waiting for them with r.Queue): the reservation names their indices,
// which the job's device request then asks for, and frees them when
// released. A CPU job gets nothing to free and the model "cpu".
func (b *Backend) Prepare(ctx context.Context, r backend.PrepareRequest) (backend.Reservation, error) {
	if r.GPUs == nil {
		return backend.NoReservation(nil), nil
	}
	e := b.Engine
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
	release := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := gpus.Release(rctx, e, r.Job.ID); err != nil {
			fmt.Fprintf(r.Log, "warning: %v (the next submit reclaims them)\n", err)
		}
	}
	return backend.Reservation{Release: release, GPUModel: got[0].Name, GPUs: &backend.GPUs{IDs: strings.Split(ids, ",")}, GPUIDs: ids}, nil
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
