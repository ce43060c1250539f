package job

import (
	"regexp"
	"strings"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
)

// RerunArgs are the arguments that submit job j again, from its record
// alone (xrun rerun, regress --confirm): its code's directory as it is
// now, its place (connect.Rerun), mode, GPUs, timeout and the
// options it recorded (store.SubmitArgs), plus env. Queue waits for the
// GPUs where other jobs hold them.
func RerunArgs(j *store.Job, env []string) Args {
	a := Args{Dir: j.ExperimentDir, CPU: j.Mode == "cpu", Queue: true, Network: "default"}
	a.Where, a.PendingLimit = connect.Rerun(j)
	if j.Mode != "cpu" {
		a.GPUs = sameGPUs(j.GPUs)
		if !connect.CapabilitiesOf(j).Has(backend.GPUsByID) {
			// The place picks the GPUs: the count the record says.
			a.GPUs = j.GPUs
		}
	}
	if d, err := time.ParseDuration(j.Timeout); err == nil && d > 0 {
		a.Timeout = d
	}
	if s := j.Submit; s != nil {
		a.Base, a.Labels, a.Root, a.Env = s.Base, s.Labels, s.Root, append([]string(nil), s.Env...)
		a.NoStandby, a.NoCacheVolume, a.CPUs = s.NoStandby, s.NoCacheVolume, s.CPUs
		a.Registry, a.PullSecret = s.Registry, s.PullSecret
		if s.Network != "" {
			a.Network = s.Network
		}
	}
	a.Env = append(a.Env, env...)
	return a
}

// sameGPUs is the --gpus that asks for the GPUs a job had: its assigned
// indices ("0,2"; "device=1" for one, which a bare 1 would count) or
// UUIDs, else what it asked for.
func sameGPUs(gpus string) string {
	if gpuIDs.MatchString(gpus) && !strings.Contains(gpus, ",") && !strings.HasPrefix(gpus, "GPU-") {
		return "device=" + gpus
	}
	return gpus
}

var gpuIDs = regexp.MustCompile(`^(\d+|GPU-[0-9a-fA-F-]+)(,(\d+|GPU-[0-9a-fA-F-]+))*$`)
