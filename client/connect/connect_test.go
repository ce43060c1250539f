package connect

import (
	"reflect"
	"testing"

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
