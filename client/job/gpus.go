package job

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/images"
)

// assignGPUs gives job j GPUs of its host that no running xrun job holds
// (waiting for them with queue), points the job's device request at them,
// and returns the function that frees them and the GPU's model. CPU jobs
// get nothing to free, and the model "cpu".
func (m *Manager) assignGPUs(ctx context.Context, p *build.Prepared, e engine.Engine, j *store.Job, sel connect.Selection, queue bool) (release func(), model string, err error) {
	if p.GPUs == nil {
		return func() {}, "cpu", nil
	}
	// A configured test inventory (gpus: N on a named host) is honoured
	// like XRUN_FAKE_GPUS; see docs/hosts.md.
	fake := m.Backends.FakeGPUs(sel)
	inv, err := gpus.Lookup(ctx, e, p.ImageRef, fake, gpus.DefaultCache(m.Backends.Getenv), m.Backends.Getenv)
	if err != nil {
		return nil, "", err
	}
	if err := checkDriver(ctx, e, p.ImageRef, inv); err != nil {
		return nil, "", err
	}
	as := &gpus.Assigner{
		Engine: e, Inventory: inv, Image: p.ImageRef, Queue: queue,
		Progress: func(line string) { fmt.Fprintln(m.Err, line) },
	}
	got, err := as.Acquire(ctx, j.ID, gpus.Request{Count: p.GPUs.Count, IDs: p.GPUs.IDs, Type: p.Spec.Resources.GPUType})
	if err != nil {
		return nil, "", err
	}
	// The device request names the assigned indices, as nvidia-smi
	// numbered them on this host when the inventory was taken.
	p.GPUIDs = gpus.Indices(got)
	p.GPUs = &backend.GPUs{IDs: strings.Split(p.GPUIDs, ",")}
	fmt.Fprintf(m.Err, "job %s gets GPU %s (%s) on %s\n", j.ID, p.GPUIDs, got[0].Name, e.Host())
	return func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := gpus.Release(rctx, e, j.ID); err != nil {
			fmt.Fprintf(m.Err, "warning: %v (the next submit reclaims them)\n", err)
		}
	}, got[0].Name, nil
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
