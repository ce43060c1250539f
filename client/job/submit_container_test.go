package job

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xrun-dev/xrun/client/build"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/engine/enginetest"
	"github.com/xrun-dev/xrun/client/gpus"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/spec"
)

// A GPU request is assigned GPUs of the host's inventory, which the
// container's device request and labels name.
func TestSubmitGPURequests(t *testing.T) {
	tests := []struct {
		gpus  string
		want  engine.GPURequest
		label string
	}{
		{gpus: "", want: engine.GPURequest{IDs: []string{"0"}}, label: "1"},
		{gpus: "2", want: engine.GPURequest{IDs: []string{"0", "1"}}, label: "2"},
		{gpus: "0,2", want: engine.GPURequest{IDs: []string{"0", "2"}}, label: "0,2"},
		{gpus: "all", want: engine.GPURequest{IDs: []string{"0", "1", "2", "3"}}, label: "all"},
		{gpus: "device=3", want: engine.GPURequest{IDs: []string{"3"}}, label: "3"},
	}
	for _, tt := range tests {
		e := newSubmitEnv(t)
		dir := experiment(t)
		e.fake.Behave = enginetest.Succeed("my-kernel")
		// Here the test inventory of 4 (docs/hosts.md).
		e.env[gpus.FakeEnv] = "4"
		if _, err := e.submit(context.Background(), t, dir, Args{Detach: true, GPUs: tt.gpus}); err != nil {
			t.Fatalf("--gpus %q: %v: %s", tt.gpus, err, e.err)
		}
		var c *enginetest.Container
		for _, fc := range e.fake.Containers {
			if fc.C.Labels[gpus.LabelReservation] == "" {
				c = fc
			}
		}
		if c.Spec.GPUs == nil || c.Spec.GPUs.Count != tt.want.Count || strings.Join(c.Spec.GPUs.IDs, ",") != strings.Join(tt.want.IDs, ",") {
			t.Errorf("--gpus %q: GPUs = %+v, want %+v", tt.gpus, c.Spec.GPUs, tt.want)
		}
		if c.C.Labels[contract.LabelGPUs] != tt.label || c.C.Labels[gpus.LabelGPUIDs] != strings.Join(tt.want.IDs, ",") || c.C.Labels[contract.LabelMode] != "gpu" {
			t.Errorf("--gpus %q: labels %v", tt.gpus, c.C.Labels)
		}
	}
}

// A job runs with bounded processes, three quarters of the host's memory
// and (Network none) no network; without Root its runner starts as root
// with the capabilities to run the experiment as the job user, and no
// others.
func TestSubmitRunsUnprivileged(t *testing.T) {
	for _, root := range []bool{false, true} {
		e := newSubmitEnv(t)
		dir := experiment(t)
		e.fake.DaemonInfo.MemoryBytes = 64 << 30
		e.fake.Behave = enginetest.Succeed("my-kernel")
		if _, err := e.submit(context.Background(), t, dir, Args{CPU: true, Network: "none", Root: root}); err != nil {
			t.Fatalf("root %v: %v: %s", root, err, e.err)
		}
		var s engine.ContainerSpec
		for _, c := range e.fake.Made() {
			s = c.Spec
		}
		if s.PidsLimit != build.DefaultPidsLimit || s.MemoryBytes != 48<<30 || !s.NetworkDisabled {
			t.Errorf("root %v: pids %d, memory %d, network disabled %v", root, s.PidsLimit, s.MemoryBytes, s.NetworkDisabled)
		}
		if unpriv := s.User == "0:0" && s.Unprivileged && slices.Contains(s.Env, "USER=xrun") &&
			slices.Contains(s.Env, contract.EnvWorkerUser+"="+contract.JobUser) && slices.Equal(s.CapAdd, contract.RunnerCaps); unpriv == root {
			t.Errorf("root %v: user %q, unprivileged %v, env %v, CapAdd %v", root, s.User, s.Unprivileged, s.Env, s.CapAdd)
		}
		if root && len(s.CapAdd) != 0 {
			t.Errorf("root %v without --profile: CapAdd %v", root, s.CapAdd)
		}
	}
}

// Profile reaches the runner as XRUN_PROFILE; with Root the job also gets
// the capability Nsight Compute needs on hosts that let only
// administrators read the counters, and the unprivileged job user none.
func TestSubmitProfile(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = enginetest.Succeed("my-kernel")
	e.env[gpus.FakeEnv] = "1"
	if _, err := e.submit(context.Background(), t, dir, Args{Detach: true, Profile: "ncu:impl=fast;case=0"}); err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	found := false
	for _, fc := range e.fake.Containers {
		for _, kv := range fc.Spec.Env {
			found = found || kv == contract.EnvProfile+"=ncu:impl=fast;case=0"
		}
	}
	if !found {
		t.Error("the job's environment lacks XRUN_PROFILE")
	}
	for _, root := range []bool{false, true} {
		e := newSubmitEnv(t)
		e.fake.Behave = enginetest.Succeed("my-kernel")
		e.env[gpus.FakeEnv] = "1"
		if _, err := e.submit(context.Background(), t, experiment(t), Args{Detach: true, Profile: "ncu", Root: root}); err != nil {
			t.Fatalf("root %v: %v: %s", root, err, e.err)
		}
		for _, fc := range e.fake.Containers {
			if fc.Spec.Labels[contract.LabelExperiment] == "" {
				continue // a GPU reservation's container
			}
			if want := map[bool][]string{true: {"SYS_ADMIN"}, false: contract.RunnerCaps}[root]; !slices.Equal(fc.Spec.CapAdd, want) {
				t.Errorf("root %v: CapAdd %v, want %v", root, fc.Spec.CapAdd, want)
			}
		}
	}
}

// An attached job's container goes once its results and logs are in the
// store, as with docker run --rm, and a standby is left for the next
// submit; Keep keeps the container.
func TestAttachedRemovesContainer(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = enginetest.Succeed("my-kernel")
	ctx := context.Background()
	j, err := e.submit(ctx, t, dir, Args{CPU: true})
	if err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	left, standbys := e.jobContainers()
	if list := e.jobs(t); len(list) != 1 || left != 0 || len(e.fake.Removed) != 1 || standbys != 1 {
		t.Fatalf("%d jobs, containers left %d, removed %d, standbys %d: want the job's container removed and a standby for the next", len(list), left, len(e.fake.Removed), standbys)
	}
	for _, f := range []string{store.ResultsFile, store.LogsFile} {
		if !e.m.Store.Has(j.ID, f) {
			t.Errorf("store lacks %s", f)
		}
	}
	_, err = e.submit(ctx, t, dir, Args{CPU: true, Keep: true})
	if left, standbys := e.jobContainers(); err != nil || left != 1 || standbys != 1 {
		t.Errorf("--keep: %v, %d job containers and %d standbys, want 1 and 1", err, left, standbys)
	}
}

// The standby of an experiment whose code uses torch.compile has its
// zygote import torch._dynamo too; another's imports numpy, torch and
// triton alone.
func TestStandbyPreloadsTheCompileStack(t *testing.T) {
	e := newSubmitEnv(t)
	dir := experiment(t)
	e.fake.Behave = enginetest.Succeed("my-kernel")
	preload := func() []string {
		var vals []string
		for _, fc := range e.fake.Containers {
			if contract.WaitingStandby(fc.C.Name, fc.C.Labels) {
				for _, kv := range fc.Spec.Env {
					if v, ok := strings.CutPrefix(kv, contract.EnvZygotePreload+"="); ok {
						vals = append(vals, v)
					}
				}
			}
		}
		return vals
	}
	if _, err := e.submit(context.Background(), t, dir, Args{CPU: true}); err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	if got := preload(); len(got) != 0 {
		t.Errorf("standby of an experiment without torch.compile preloads %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "compiled.py"), []byte("import torch\nf = torch.compile(lambda x: x)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.submit(context.Background(), t, dir, Args{CPU: true}); err != nil {
		t.Fatalf("submit: %v: %s", err, e.err)
	}
	if got := preload(); len(got) != 1 || got[0] != strings.Join(spec.CompileStack, ",") {
		t.Errorf("standby of a torch.compile experiment preloads %v, want %v", got, spec.CompileStack)
	}
}
