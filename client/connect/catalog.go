package connect

import (
	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/client/store"
)

// Capabilities is what the place a submit picked declares of itself: the
// Slurm cluster with the runtime slurm names when slurm is set, else the
// cluster or Docker host sel picks. A submit is refused from it before
// anything is built.
func Capabilities(sel Selection, slurmSettings *store.SlurmSettings) backend.Capabilities {
	switch {
	case slurmSettings != nil:
		return slurm.Capabilities(slurmSettings.Runtime)
	case sel.K8s:
		return kube.Capabilities
	}
	return dockerhost.Capabilities
}

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
