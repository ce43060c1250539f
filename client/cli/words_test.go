package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/result"
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
		{fmt.Errorf("create job: %w", &backend.UnsupportedError{Backend: "Slurm", Flag: "--slurm", Asked: backend.RunAsRoot, Instead: "a Slurm job runs as your user on the cluster"}),
			"create job: --root does not apply with --slurm: a Slurm job runs as your user on the cluster"},
		{fmt.Errorf("push: %w", &backend.MissingError{Setting: backend.Registry, Why: "x"}),
			"push: no registry for the cluster to pull the job's image from: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY (docs/kubernetes.md)"},
		{&backend.MissingError{Setting: backend.KubeContext, Why: "x"},
			"the kubeconfig has no current context: pass --context, or point KUBECONFIG at the cluster's kubeconfig (docs/kubernetes.md)"},
		{&contract.ExitError{Code: contract.ExitUsage, Err: &backend.RunningError{JobID: "0123abcd4567", State: "Running"}},
			"job 0123abcd4567 is Running: cancel it first, or pass --force"},
		{errors.New("plain"), "plain"},
	} {
		if got := worded(c.err); got != c.want {
			t.Errorf("worded(%v) =\n  %s\nwant\n  %s", c.err, got, c.want)
		}
	}
}

// Every feature a place may lack is worded as the flag that asks for it,
// and every place in the catalog declares its name and only known features.
func TestFeaturesWorded(t *testing.T) {
	for _, f := range backend.Features {
		if featureFlags[f] == "" {
			t.Errorf("feature %v has no flag's words", f)
		}
	}
	for _, c := range connect.Catalog() {
		if c.Name == "" {
			t.Errorf("a place without a name: %+v", c)
		}
		for f, why := range c.Lacks {
			if featureFlags[f] == "" || why == "" {
				t.Errorf("%s lacks %v without words for it (%q)", c.Name, f, why)
			}
		}
	}
}

func TestExitCodeText(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, c := range []struct {
		j    store.Job
		want string
	}{
		{store.Job{ID: "a", Status: result.StatusSucceeded, ExitCode: code(0)}, "0"},
		{store.Job{ID: "b", Status: result.StatusTimeout, ExitCode: code(130), Timeout: "20s"}, "124 (the runner's own: 130)"},
		{store.Job{ID: "c", Status: result.StatusFailed, ExitCode: code(-1), Error: "its node failed"}, "2 (the runner left none)"},
		{store.Job{ID: "d", Status: result.StatusCriteriaFailed, ExitCode: code(1)}, "1"},
	} {
		if got := exitCodeText(&c.j); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.j.Status, c.j.ID, got, c.want)
		}
	}
}
