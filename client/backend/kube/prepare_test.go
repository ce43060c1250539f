package kube

import (
	"context"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
)

// A cluster job's cache key holds what is known before scheduling: CPU or
// GPU, and the spec's gpu_type.
func TestPrepareGPUModel(t *testing.T) {
	one := &backend.GPUs{Count: 1}
	for _, tc := range []struct {
		gpus    *backend.GPUs
		gpuType string
		want    string
	}{
		{nil, "", "cpu"},
		{nil, "H100", "cpu"},
		{one, "", "gpu"},
		{one, "H100", "gpu_type h100"},
		{one, "h100", "gpu_type h100"},
	} {
		res, err := (&Backend{}).Prepare(context.Background(), backend.PrepareRequest{GPUs: tc.gpus, GPUType: tc.gpuType})
		if err != nil || res.GPUModel != tc.want || res.GPUs != nil || res.Release == nil {
			t.Errorf("Prepare(gpus %v, gpu_type %q) = %+v, %v; want the model %q", tc.gpus, tc.gpuType, res, err, tc.want)
		}
	}
}
