package job

import (
	"slices"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
)

// A rerun asks for what the record says: the same GPUs by index on a Docker
// host, the recorded options and the --env names, with Queue so that it
// waits for busy GPUs. (A cluster's rerun: connect's TestRerun.)
func TestRerunArgs(t *testing.T) {
	j := &store.Job{ID: "0123abcd", Host: "ssh://lab", ExperimentDir: "/x/exp", Mode: "gpu", GPUs: "1", Timeout: "10m0s",
		Submit: &store.SubmitArgs{Base: "cuda-12", CPUs: 2, Labels: []string{"a=b"}, Network: "none", Env: []string{"SEED"}, NoStandby: true}}
	a := RerunArgs(j, []string{"EXTRA=1"})
	if a.Dir != "/x/exp" || a.Where.Host != "ssh://lab" || a.Where.Cluster() || !a.Queue || a.CPU {
		t.Errorf("place and mode: %+v", a)
	}
	if a.GPUs != "device=1" || a.Timeout != 10*time.Minute || a.Base != "cuda-12" || a.CPUs != 2 || a.Network != "none" || !a.NoStandby {
		t.Errorf("options: %+v", a)
	}
	if !slices.Equal(a.Env, []string{"SEED", "EXTRA=1"}) || !slices.Equal(a.Labels, []string{"a=b"}) {
		t.Errorf("env %v labels %v", a.Env, a.Labels)
	}
	if j.Submit.Env[0] != "SEED" || len(j.Submit.Env) != 1 {
		t.Errorf("the record's env names changed: %v", j.Submit.Env)
	}

	// A place that picks the GPUs (it lacks GPUs by id) reruns with the
	// count the record says.
	for _, host := range []string{"slurm://login1", "k8s://lab/default"} {
		rec := &store.Job{Host: host, Mode: "gpu", GPUs: "1", Submit: &store.SubmitArgs{Registry: "registry.lab:5000", PullSecret: "pull"}}
		a := RerunArgs(rec, nil)
		if a.GPUs != "1" || !a.Where.Cluster() {
			t.Errorf("%s: rerun GPUs %q on %+v, want the count 1 on the cluster", host, a.GPUs, a.Where)
		}
		if a.Registry != "registry.lab:5000" || a.PullSecret != "pull" {
			t.Errorf("%s: rerun pushes to %q with secret %q, want the recorded ones", host, a.Registry, a.PullSecret)
		}
	}

	c := RerunArgs(&store.Job{Host: "unix:///var/run/docker.sock", Mode: "cpu", GPUs: "0"}, nil)
	if !c.CPU || c.GPUs != "" {
		t.Errorf("a CPU job reruns on the CPU: %+v", c)
	}
	for in, want := range map[string]string{"0,2": "0,2", "GPU-ab12": "GPU-ab12", "all": "all", "2": "device=2"} {
		if got := sameGPUs(in); got != want {
			t.Errorf("sameGPUs(%q) = %q, want %q", in, got, want)
		}
	}
}

// A submit's record keeps what its rerun repeats: a cluster's pending
// limit, registry and pull secret, and the --env names alone; a Docker
// host's record keeps no cluster's options.
func TestRerunArgsRecorded(t *testing.T) {
	a := Args{Where: connect.Selection{K8s: true}, Registry: "registry.lab:5000", PullSecret: "pull", PendingLimit: time.Hour, Env: []string{"TOKEN=secret"}}
	r := a.rerunArgs()
	if r.Registry != "registry.lab:5000" || r.PullSecret != "pull" || r.PendingLimit != time.Hour || !slices.Equal(r.Env, []string{"TOKEN"}) {
		t.Errorf("a cluster's record: %+v", r)
	}
	a.Where = connect.Selection{Host: "ssh://lab"}
	if r := a.rerunArgs(); r.Registry != "" || r.PendingLimit != 0 || r.Place != nil {
		t.Errorf("a Docker host's record: %+v", r)
	}
}
