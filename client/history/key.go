package history

import (
	"encoding/json"
	"strings"

	"github.com/xrun-dev/xrun/client/flat"
)

// Key identifies a series: one implementation at one case of one experiment
// on one kind of machine. The machine is its device model, the driver's and
// the CUDA runtime's major versions, the software stack of its base image
// and its clock policy (flat.StackOf, flat.ClockPolicyOf); the host and the
// GPU's UUID are not part of it, so a series survives a swapped card or a
// second box of the same kind, and filters pick them out.
//
// The clock a timing is read on (kernel, events) is not part of it either:
// the rule starts a new baseline where a series changes clock
// (Points.Values).
type Key struct {
	Experiment     string `json:"experiment"`
	Case           string `json:"case"`
	Params         string `json:"params"` // canonical JSON, keys sorted
	Implementation string `json:"implementation"`
	GPU            string `json:"gpu"`
	Driver         string `json:"driver"` // major
	CUDA           string `json:"cuda"`   // major
	Stack          string `json:"stack"`
	ClockPolicy    string `json:"clock_policy"`
	Mode           string `json:"mode"`
}

// KeyOf is the series of a flattened row.
func KeyOf(r flat.Row) Key {
	params, _ := json.Marshal(r.Params) // maps marshal with sorted keys
	return Key{Experiment: r.Experiment, Case: r.Case, Params: string(params), Implementation: r.Implementation, GPU: r.GPU,
		Driver: flat.Major(r.Driver), CUDA: flat.Major(r.CUDA), Stack: r.Stack, ClockPolicy: r.ClockPolicy, Mode: r.Mode}
}

// String is the key's canonical form, which the database keeps unique. The
// case's label is left out: the parameters say the same.
func (k Key) String() string {
	b, _ := json.Marshal([]string{k.Experiment, k.Params, k.Implementation, k.GPU, k.Driver, k.CUDA, k.Stack, k.ClockPolicy, k.Mode})
	return string(b)
}

// Group is the key without the implementation: the series of one group
// were timed side by side, on the same machine in the same runs, which the
// relative rule reads together (regress.WalkRelative).
func (k Key) Group() string {
	b, _ := json.Marshal([]string{k.Experiment, k.Params, k.GPU, k.Driver, k.CUDA, k.Stack, k.ClockPolicy, k.Mode})
	return string(b)
}

// Machine describes the key's kind of machine: the GPU, its driver, CUDA,
// the software stack and the clock policy.
func (k Key) Machine() string {
	parts := []string{k.GPU}
	if k.Driver != "" {
		parts = append(parts, "driver "+k.Driver)
	}
	if k.CUDA != "" {
		parts = append(parts, "CUDA "+k.CUDA)
	}
	if k.Stack != "" {
		parts = append(parts, k.Stack)
	}
	if k.ClockPolicy != "" {
		parts = append(parts, k.ClockPolicy)
	}
	return strings.Join(parts, ", ")
}

// PointsOf are the points of judged points.
func PointsOf(js []Judged) []Point {
	out := make([]Point, len(js))
	for i, j := range js {
		out[i] = j.Point
	}
	return out
}
