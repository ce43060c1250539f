package cli

import (
	"context"

	"github.com/xrun-dev/xrun/client/backend/kube"
)

// kubeBackend returns the (cached) backend of a cluster's namespace,
// connecting on first use. A job's record names its context and
// namespace; the kubeconfig is the one the environment points at.
func (a *App) kubeBackend(ctx context.Context, sel kube.Selection) (*kube.Backend, error) {
	if sel.Kubeconfig == "" {
		sel.Kubeconfig = a.getenv("XRUN_KUBECONFIG")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.kubes[sel]; ok {
		return b, nil
	}
	b, err := kube.Connect(ctx, sel)
	if err != nil {
		return nil, err
	}
	b.Log = a.Err
	if a.kubes == nil {
		a.kubes = map[kube.Selection]*kube.Backend{}
	}
	a.kubes[sel] = b
	return b, nil
}
