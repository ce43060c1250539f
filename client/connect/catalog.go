package connect

import (
	"encoding/json"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/backend/kube"
	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/client/backend/slurm"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
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
		runtime := slurmSettings(j).Runtime
		if runtime == "" {
			runtime = slurm.RuntimeBare
		}
		return slurm.Capabilities(runtime)
	case kube.IsRef(j.Host):
		return kube.Capabilities
	case local.IsRef(j.Host):
		return local.Capabilities
	}
	return dockerhost.Capabilities
}

// SlurmSettings are a Slurm job's options (client/backend/slurm).
type SlurmSettings = slurm.Settings

// slurmSettings are the options a Slurm job j was submitted with, as its
// record keeps them (zero where it kept none).
func slurmSettings(j *store.Job) slurm.Settings {
	var s slurm.Settings
	if j.Submit != nil && len(j.Submit.Place) > 0 {
		json.Unmarshal(j.Submit.Place, &s)
	}
	return s
}

// CheckSelection refuses a selection whose place's options contradict each other
// or the rest of it, before anything is built.
func CheckSelection(sel Selection) error {
	if sel.Slurm == nil {
		return nil
	}
	if sel.K8s || sel.Explicit() {
		return contract.Usagef("--slurm runs on a Slurm cluster: leave out --host, --context and --k8s")
	}
	return sel.Slurm.Settings.Check()
}

// NotSearched says, as a clause to add to "not found", where a job not
// found on the place sel picks may still be: a cluster's jobs are found
// only where they were asked for.
func NotSearched(sel Selection) string {
	if sel.K8s {
		return ""
	}
	return " (a job on a Kubernetes cluster: add --k8s, and --context or --namespace where it is not the default)"
}

// Cluster reports whether sel picks a cluster, whose scheduler finds a
// node for the job (--pending-limit applies).
func (sel Selection) Cluster() bool { return sel.K8s || sel.Slurm != nil }

// PlaceOptions are the options of the place sel picks that a job's record
// keeps for a rerun (store.SubmitArgs.Place; nil: none beyond the host).
func PlaceOptions(sel Selection) json.RawMessage {
	if sel.Slurm == nil {
		return nil
	}
	b, err := json.Marshal(sel.Slurm.Settings)
	if err != nil {
		return nil
	}
	return b
}

// Rerun is where a rerun of job j goes and how long it may wait for a
// node: the Slurm cluster it ran on, with the options it was submitted
// with (partition, GPU type, Python, runtime), the Kubernetes cluster's
// namespace it ran in (its image built on this machine's Docker host, as
// a submit's), else the host its record names.
func Rerun(j *store.Job) (sel Selection, pendingLimit time.Duration) {
	if j.Submit != nil {
		pendingLimit = j.Submit.PendingLimit
	}
	if kube.IsRef(j.Host) {
		return Selection{K8s: true, Kube: kube.ParseRef(j.Host)}, pendingLimit
	}
	if !slurm.IsRef(j.Host) {
		return Selection{Host: j.Host}, pendingLimit
	}
	login, _ := slurm.ParseRef(j.Host)
	t := &SlurmTarget{Login: login, Settings: slurmSettings(j)}
	if pendingLimit == 0 {
		// An earlier version kept it with the Slurm options.
		pendingLimit = t.Settings.PendingLimit
	}
	t.Settings.PendingLimit = 0
	return Selection{Slurm: t}, pendingLimit
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
		slurm.Capabilities(slurm.RuntimeBare),
		slurm.Capabilities(slurm.RuntimeDocker),
		local.Capabilities,
	}
}
