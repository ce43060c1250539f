package dockerhost

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

func TestCheckDriver(t *testing.T) {
	f := enginetest.New()
	f.ImageIDs["xrun/x:1"] = "sha256:x"
	f.ImageEnv = map[string][]string{"xrun/x:1": {"PATH=/bin", "CUDA_VERSION=13.0.1"}}
	inv := func(driver string) gpus.Inventory {
		return gpus.Inventory{Host: f.Host(), GPUs: []gpus.GPU{{Index: 0, UUID: "GPU-a", Name: "NVIDIA H100", Driver: driver}}}
	}
	err := checkDriver(context.Background(), f, "xrun/x:1", inv("575.51.03"))
	want := "host unix:///fake.sock cannot run xrun/x:1: the image is built for CUDA 13.0.1, which needs driver 580.65.06 or newer; the host's NVIDIA driver 575.51.03 runs CUDA 12 and older"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("old driver: %v, want %q", err, want)
	}
	for _, driver := range []string{"580.159.04", ""} {
		if err := checkDriver(context.Background(), f, "xrun/x:1", inv(driver)); err != nil {
			t.Errorf("driver %q: %v", driver, err)
		}
	}
}

// Prepare hands a Docker host's CPUs out: a job's resources.cpus, a GPU
// job's share by default, and the pool to a CPU job that asks for none.
// A job of the pool keeps the CPUs it started on.
func TestPrepareCPUs(t *testing.T) {
	f := enginetest.New()
	f.ImageIDs["img"] = "sha256:img"
	f.DaemonInfo.CPUs = 8
	b := &Backend{Engine: f, FakeGPUs: 2, Getenv: func(string) string { return "" }}
	ctx := context.Background()
	var log strings.Builder
	prepare := func(id string, r backend.PrepareRequest) (backend.Reservation, string) {
		t.Helper()
		r.Job, r.Image, r.Log = &store.Job{ID: id}, "img", &log
		res, err := b.Prepare(ctx, r)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		c := f.Add("job-"+id, "running", map[string]string{contract.LabelJob: id}, time.Now())
		f.Containers[c].C.CPUSet = res.CPUSet
		return res, c
	}
	res, first := prepare("first", backend.PrepareRequest{})
	if res.CPUSet != "" {
		t.Errorf("a CPU job with nothing reserved runs on %q, want all CPUs", res.CPUSet)
	}
	if err := f.SetState(first, "exited"); err != nil {
		t.Fatal(err)
	}
	// One GPU of two: half of the host's CPUs.
	gpuJob, _ := prepare("gpu", backend.PrepareRequest{GPUs: &backend.GPUs{Count: 1}})
	if gpuJob.CPUSet != "4-7" || gpuJob.GPUIDs != "0" {
		t.Errorf("GPU job: CPUs %q, GPUs %q; want 4-7, 0", gpuJob.CPUSet, gpuJob.GPUIDs)
	}
	if res, _ := prepare("two", backend.PrepareRequest{CPUs: 2}); res.CPUSet != "2-3" {
		t.Errorf("cpus: 2 got %q, want 2-3", res.CPUSet)
	}
	pool, pc := prepare("pool", backend.PrepareRequest{})
	if pool.CPUSet != "0-1" {
		t.Errorf("a CPU job beside them runs on %q, want 0-1", pool.CPUSet)
	}
	// The second GPU's share is 4 CPUs, but the pool job is on the only
	// ones left: it runs beside it rather than wait.
	if res, _ := prepare("gpu2", backend.PrepareRequest{GPUs: &backend.GPUs{Count: 1}}); res.CPUSet != "0-1" {
		t.Errorf("second GPU job: CPUs %q, want 0-1", res.CPUSet)
	}
	_, err := b.Prepare(ctx, backend.PrepareRequest{Job: &store.Job{ID: "more"}, Image: "img", CPUs: 1, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "cannot give this job 1 CPUs now (0 of 8 free") || !strings.Contains(err.Error(), "CPU 0-1 by job") {
		t.Errorf("a reservation of a CPU the pool's jobs are on: %v", err)
	}
	if got := f.Containers[pc].C.CPUSet; got != "0-1" {
		t.Errorf("the pool job was moved onto %q", got)
	}
	if !strings.Contains(log.String(), "job gpu gets CPU 4-7 of 8 on unix:///fake.sock") {
		t.Errorf("log:\n%s", log.String())
	}
}

// On a one-GPU host the GPU job's share is every CPU but the last free
// one, which a CPU job beside it then runs on.
func TestPrepareLeavesACPUBesideAGPUJob(t *testing.T) {
	f := enginetest.New()
	f.ImageIDs["img"] = "sha256:img"
	f.DaemonInfo.CPUs = 4
	b := &Backend{Engine: f, FakeGPUs: 1, Getenv: func(string) string { return "" }}
	ctx := context.Background()
	var log strings.Builder
	res, err := b.Prepare(ctx, backend.PrepareRequest{Job: &store.Job{ID: "gpu"}, Image: "img", GPUs: &backend.GPUs{Count: 1}, Log: &log})
	if err != nil || res.CPUSet != "1-3" {
		t.Fatalf("GPU job: CPUs %q, %v; want 1-3", res.CPUSet, err)
	}
	f.Add("job-gpu", "running", map[string]string{contract.LabelJob: "gpu"}, time.Now())
	res, err = b.Prepare(ctx, backend.PrepareRequest{Job: &store.Job{ID: "cpu"}, Image: "img", Log: &log})
	if err != nil || res.CPUSet != "0" {
		t.Errorf("CPU job beside it: CPUs %q, %v; want 0", res.CPUSet, err)
	}
}
