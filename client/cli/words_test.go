package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
)

// A backend's typed errors come out naming the flags that change them,
// with whatever context wraps them kept.
func TestWorded(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("create job: %w", &backend.UnsupportedError{Backend: "Kubernetes", Asked: backend.NoNetwork, Instead: "a NetworkPolicy of the namespace decides the job's network"}),
			"create job: --network none does not apply on Kubernetes: a NetworkPolicy of the namespace decides the job's network"},
		{&backend.UnsupportedError{Backend: "Kubernetes", Asked: backend.GPUsByID, Instead: "the scheduler picks the GPUs; give a count"},
			"--gpus with device ids or all does not apply on Kubernetes: the scheduler picks the GPUs; give a count"},
		{fmt.Errorf("push: %w", &backend.MissingError{Setting: backend.Registry, Why: "x"}),
			"push: no registry for the cluster to pull the job's image from: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY (docs/kubernetes.md)"},
		{&backend.MissingError{Setting: backend.KubeContext, Why: "x"},
			"the kubeconfig has no current context: pass --context, or point KUBECONFIG at the cluster's kubeconfig (docs/kubernetes.md)"},
		{&ExitError{Code: ExitUsage, Err: &backend.RunningError{JobID: "0123abcd4567", State: "Running"}},
			"job 0123abcd4567 is Running: cancel it first, or pass --force"},
		{errors.New("plain"), "plain"},
	} {
		if got := worded(c.err); got != c.want {
			t.Errorf("worded(%v) =\n  %s\nwant\n  %s", c.err, got, c.want)
		}
	}
}
