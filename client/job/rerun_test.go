package job

import (
	"slices"
	"testing"
	"time"

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
	for _, host := range []string{"slurm://login1"} {
		if a := RerunArgs(&store.Job{Host: host, Mode: "gpu", GPUs: "1"}, nil); a.GPUs != "1" || !a.Where.Cluster() {
			t.Errorf("%s: rerun GPUs %q on %+v, want the count 1 on the cluster", host, a.GPUs, a.Where)
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
