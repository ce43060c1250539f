package kube

import (
	"context"
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
)

var _ backend.Preparer = (*Backend)(nil)

// Prepare reserves nothing (the scheduler picks the node and its GPUs
// later) and names the GPU model of the job's compile caches by what is
// known before scheduling: "cpu" for a CPU job, the spec's gpu_type when
// it names one, else "gpu". A cluster keeps the caches per node
// (CachePath), and a node's GPUs are of one model as a rule; gpu_type
// keeps the caches of the GPU models it names apart also on a node that
// has two.
func (b *Backend) Prepare(_ context.Context, r backend.PrepareRequest) (backend.Reservation, error) {
	res := backend.NoReservation(r.GPUs)
	if r.GPUs != nil && r.GPUType != "" {
		res.GPUModel = "gpu_type " + strings.ToLower(r.GPUType)
	}
	return res, nil
}
