package connect

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/client/store"
)

// xrun status names what runs a job in its backend's words, from the
// record alone.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		j     store.Job
		rows  [][2]string
		state string
	}{
		{store.Job{Host: "unix:///var/run/docker.sock", ContainerName: "xrun-quick-0123"}, [][2]string{{"container", "xrun-quick-0123"}}, "container state"},
		{store.Job{Host: "k8s://lab/ci", ContainerName: "xrun-quick-0123"}, [][2]string{{"kubernetes job", "xrun-quick-0123"}}, "pod state"},
		{store.Job{Host: "slurm://login", ContainerID: "4242", ContainerName: "/home/u/.xrun/slurm/0123"},
			[][2]string{{"slurm job", "4242"}, {"directory", "/home/u/.xrun/slurm/0123"}}, "slurm state"},
		// Before sbatch took it, the Slurm job is its directory alone.
		{store.Job{Host: "slurm+local://vm", ContainerID: "/jobs/0123", ContainerName: "/jobs/0123"},
			[][2]string{{"directory", "/jobs/0123"}}, "slurm state"},
	} {
		rows, state := Describe(&tc.j)
		if !reflect.DeepEqual(rows, tc.rows) || state != tc.state {
			t.Errorf("%s: %v %q, want %v %q", tc.j.Host, rows, state, tc.rows, tc.state)
		}
	}
}

// A login node's slurm: options fill what the flags leave unset; its
// python: is for bare jobs, and a docker-runtime job (whose image has its
// Python) does not get it, while a --python given for the job stays to be
// refused.
func TestSlurmDefaults(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "xrun"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "hosts:\n  hpc:\n    host: ssh://me@login.example\n    slurm: {partition: gpu, python: /opt/venv/bin/python3, sbatch: [--exclusive, \"--comment=lab,nightly\"]}\n"
	if err := os.WriteFile(filepath.Join(dir, "xrun", "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Set{Getenv: func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return dir
		}
		return ""
	}}
	bare := s.SlurmDefaults("hpc", SlurmSettings{})
	if bare.Partition != "gpu" || bare.Python != "/opt/venv/bin/python3" {
		t.Errorf("bare: %+v, want the login node's partition and python", bare)
	}
	docker := s.SlurmDefaults("hpc", SlurmSettings{Runtime: slurm.RuntimeDocker})
	if docker.Partition != "gpu" || docker.Python != "" {
		t.Errorf("docker runtime: %+v, want the partition without the node's python", docker)
	}
	asked := s.SlurmDefaults("hpc", SlurmSettings{Runtime: slurm.RuntimeDocker, Python: "/usr/bin/python3"})
	if asked.Python != "/usr/bin/python3" {
		t.Errorf("a --python given with the docker runtime was dropped: %+v", asked)
	}
	// The config's sbatch options come first, so that the command line's
	// win; a rerun's record, which has them already, gets them once.
	flags := s.SlurmDefaults("hpc", SlurmSettings{Sbatch: []string{"--comment=mine"}})
	if got := strings.Join(flags.Sbatch, " "); got != "--exclusive --comment=lab,nightly --comment=mine" {
		t.Errorf("sbatch options %q", got)
	}
	if again := s.SlurmDefaults("hpc", flags); strings.Join(again.Sbatch, " ") != strings.Join(flags.Sbatch, " ") {
		t.Errorf("a rerun's options %q, want %q", again.Sbatch, flags.Sbatch)
	}
}

// A job stopped with no stop on record is said to be stopped by what
// stops jobs where it ran, not in a Docker host's words everywhere.
func TestStoppedOutsideByPlace(t *testing.T) {
	for host, want := range map[string]string{
		"unix:///var/run/docker.sock": "docker stop, a Docker daemon restart",
		"k8s://lab/default":           "kubectl delete of its pod or Job, a node drain",
		"slurm://hpc":                 "scancel, a node that went down",
		"local://box":                 "a kill of the runner",
	} {
		got := CapabilitiesOf(&store.Job{Host: host}).StoppedOutside()
		if !strings.HasPrefix(got, "stopped (SIGTERM) by something other than this job store's xrun: "+want) {
			t.Errorf("%s: %q", host, got)
		}
	}
}

// A cluster's job reruns where it ran, with the options its record keeps,
// and the count of GPUs it asked for (the cluster picks which): from a
// record of this version and from one that kept the Slurm options under
// their own name, with the pending limit among them.
func TestRerun(t *testing.T) {
	records := map[string]string{
		"this version": `{"id":"0123456789ab","host":"slurm://login1","mode":"gpu","gpus":"2",
			"submit":{"pending_limit":7200000000000,"place":{"partition":"gpu","runtime":"docker"}}}`,
		"earlier": `{"id":"0123456789ab","host":"slurm://login1","mode":"gpu","gpus":"2",
			"submit":{"slurm":{"partition":"gpu","runtime":"docker","pending_limit":7200000000000}}}`,
	}
	for name, record := range records {
		var j store.Job
		if err := json.Unmarshal([]byte(record), &j); err != nil {
			t.Fatal(err)
		}
		sel, limit := Rerun(&j)
		if sel.Slurm == nil || sel.Slurm.Login != "login1" || sel.Slurm.Settings.Partition != "gpu" || sel.Slurm.Settings.Runtime != slurm.RuntimeDocker {
			t.Fatalf("%s: a Slurm job reruns on its cluster with its settings: %+v", name, sel)
		}
		if limit != 2*time.Hour || sel.Slurm.Settings.PendingLimit != 0 {
			t.Errorf("%s: pending limit %s (settings %s), want 2h0m0s for the rerun alone", name, limit, sel.Slurm.Settings.PendingLimit)
		}
		if c := CapabilitiesOf(&j); c.Has(backend.BaseImage) != true || c.Has(backend.GPUsByID) {
			t.Errorf("%s: the docker runtime's capabilities: %+v", name, c)
		}
		// Saved again, the record keeps the options where this version
		// reads them.
		again, err := json.Marshal(&j)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(again), `"place":{"partition":"gpu","runtime":"docker"`) {
			t.Errorf("%s: saved again as %s", name, again)
		}
	}
	if sel, _ := Rerun(&store.Job{Host: "ssh://lab"}); sel.Host != "ssh://lab" || sel.Cluster() {
		t.Errorf("a Docker host's job reruns on its host: %+v", sel)
	}
	// A Kubernetes job reruns in its context's namespace, its image built
	// on this machine's Docker host as a submit's is.
	if sel, _ := Rerun(&store.Job{Host: "k8s://lab/team"}); !sel.K8s || sel.Kube.Context != "lab" || sel.Kube.Namespace != "team" || sel.Host != "" {
		t.Errorf("a Kubernetes job's rerun: %+v", sel)
	}
}
