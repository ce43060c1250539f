package backend

import (
	"fmt"
	"slices"
)

// Capabilities is what a kind of place declares of itself: its name in the
// user's words, the submit flag that picks it, and the features it lacks,
// each with what decides in its place. Each backend package declares its
// own (dockerhost.Capabilities, kube.Capabilities, ...); client/connect is
// the catalog that names them, and a submit is refused from this table
// alone, before anything is built: no code outside the backends asks which
// backend it talks to.
type Capabilities struct {
	// Name names the kind of place ("Kubernetes", "a Docker host").
	Name string
	// Flag is the submit flag that picks it ("--k8s"; "" for the default,
	// a Docker host).
	Flag string
	// Lacks maps each feature the place cannot give to what decides
	// instead ("the scheduler picks the GPUs; give a count").
	Lacks map[Feature]string
	// Needs maps each setting a submit must give before the build to
	// why the place needs it ("the cluster pulls the job's image from
	// one").
	Needs map[Setting]string
	// NoConfirm, when set, says why a rerun there cannot confirm a
	// suspected regression (regress --confirm): the place picks the
	// machine and GPU, so the rerun may not measure the same one.
	NoConfirm string
	// CachesElsewhere, when set, says where the place keeps its jobs'
	// compile caches, which xrun prune --caches does not reach.
	CachesElsewhere string
	// StoppedBy names what, besides xrun, stops a job there (a job
	// cancelled with no xrun cancel on record: StoppedOutside).
	StoppedBy string
}

// StoppedOutside is the error of a job whose runner was stopped (SIGTERM)
// with no stop on record: something other than this job store's xrun, as
// the place names it.
func (c Capabilities) StoppedOutside() string {
	by := c.StoppedBy
	if by == "" {
		by = "docker stop, a Docker daemon restart, a host shutdown"
	}
	return "stopped (SIGTERM) by something other than this job store's xrun: " + by + ", or a cancel whose record could not be saved"
}

// Feature is something a job may ask of where it runs that not every
// place gives.
type Feature int

const (
	// GPUsByID asks for GPUs by device id, or for all of them.
	GPUsByID Feature = iota + 1
	// NoNetwork asks for a job without a network.
	NoNetwork
	// CPUReservation gives the job CPUs of its own (resources.cpus,
	// --cpus): reserved on a Docker host, allocated by Slurm
	// (--cpus-per-task), requested by a Kubernetes pod.
	CPUReservation
	// RunAsRoot runs the runner and the code as root (--root).
	RunAsRoot
	// BaseImage picks the job image's base (--base).
	BaseImage
)

// Features lists every feature, in the order a refusal names the first
// one lacking.
var Features = []Feature{GPUsByID, NoNetwork, CPUReservation, RunAsRoot, BaseImage}

func (f Feature) String() string {
	switch f {
	case GPUsByID:
		return "GPUs by device id or all"
	case NoNetwork:
		return "no network"
	case CPUReservation:
		return "a reservation of host CPUs"
	case RunAsRoot:
		return "running as root"
	case BaseImage:
		return "a base image"
	}
	return fmt.Sprintf("feature %d", int(f))
}

// Has reports whether the place gives f.
func (c Capabilities) Has(f Feature) bool {
	_, lacks := c.Lacks[f]
	return !lacks
}

// Refuse returns the refusal of the first of asked that the place lacks
// (in the order of Features), or nil when it gives them all.
func (c Capabilities) Refuse(asked ...Feature) error {
	for _, f := range Features {
		if why, lacks := c.Lacks[f]; lacks && slices.Contains(asked, f) {
			return &UnsupportedError{Backend: c.Name, Flag: c.Flag, Asked: f, Instead: why}
		}
	}
	return nil
}

// Missing returns the refusal of the first setting the place needs that
// given reports absent, or nil when every one is given.
func (c Capabilities) Missing(given func(Setting) bool) error {
	for _, s := range Settings {
		if why, needs := c.Needs[s]; needs && !given(s) {
			return &MissingError{Setting: s, Why: why}
		}
	}
	return nil
}

// Asks is what spec asks of its place among the features a backend checks
// again as it creates the job (a rerun's or a fan-out's spec that no
// command line checked): GPUs by id and no network.
func (s Spec) Asks() []Feature {
	var asked []Feature
	if s.GPUs != nil && (len(s.GPUs.IDs) > 0 || s.GPUs.Count < 0) {
		asked = append(asked, GPUsByID)
	}
	if s.NoNetwork {
		asked = append(asked, NoNetwork)
	}
	return asked
}

// UnsupportedError is a place's refusal of a job it cannot run as asked,
// from its Capabilities. Its text is the backend's own; the command line
// words it in its flags.
type UnsupportedError struct {
	// Backend names the kind of place ("Kubernetes") and Flag the flag
	// that picked it ("--k8s").
	Backend, Flag string
	Asked         Feature
	// Instead says what decides in the place's stead.
	Instead string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s does not apply on %s: %s", e.Asked, e.Backend, e.Instead)
}
