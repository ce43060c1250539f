package connect

import (
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/client/store"
)

// Capabilities is what the place sel picks declares of itself (a Slurm
// cluster's with its runtime). A submit is refused from it before
// anything is built.
func Capabilities(sel Selection) backend.Capabilities {
	switch {
	case sel.Slurm != nil:
		return slurm.Capabilities(sel.Slurm.Settings.Runtime)
	case sel.K8s:
		return kube.Capabilities
	}
	return dockerhost.Capabilities
}

// CapabilitiesOf is what the place job j ran on declares, read from its
// record's host (and its Slurm runtime).
func CapabilitiesOf(j *store.Job) backend.Capabilities {
	switch {
	case slurm.IsRef(j.Host):
		runtime := store.RuntimeBare
		if j.Submit != nil && j.Submit.Slurm != nil && j.Submit.Slurm.Runtime != "" {
			runtime = j.Submit.Slurm.Runtime
		}
		return slurm.Capabilities(runtime)
	case kube.IsRef(j.Host):
		return kube.Capabilities
	case local.IsRef(j.Host):
		return local.Capabilities
	}
	return dockerhost.Capabilities
}

// RerunSelection is where a rerun of job j goes: the Slurm cluster it ran
// on, with the options it was submitted with (partition, GPU type,
// Python, runtime), else the host its record names.
func RerunSelection(j *store.Job) Selection {
	if !slurm.IsRef(j.Host) {
		return Selection{Host: j.Host}
	}
	login, _ := slurm.ParseRef(j.Host)
	t := &SlurmTarget{Login: login}
	if s := j.Submit; s != nil && s.Slurm != nil {
		t.Settings = *s.Slurm
	}
	return Selection{Slurm: t}
}

// PendingLimit is how long a cluster's job with a timeout may wait for a
// node by default (submit --pending-limit), the same on Slurm and
// Kubernetes.
const PendingLimit = slurm.DefaultPendingLimit

// Catalog is every kind of place xrun runs jobs on, as each declares
// itself (Slurm once per runtime).
func Catalog() []backend.Capabilities {
	return []backend.Capabilities{
		dockerhost.Capabilities,
		kube.Capabilities,
		slurm.Capabilities(store.RuntimeBare),
		slurm.Capabilities(store.RuntimeDocker),
		local.Capabilities,
	}
}
