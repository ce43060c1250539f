package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xrun-dev/xrun/client/backend"
)

// featureFlags words each feature a place may lack as the submit's flag
// that asks for it (backend.Capabilities).
var featureFlags = map[backend.Feature]string{
	backend.GPUsByID:       "--gpus with device ids or all",
	backend.NoNetwork:      "--network none",
	backend.CPUReservation: "--cpus",
	backend.RunAsRoot:      "--root",
	backend.BaseImage:      "--base",
}

// worded is err's text in the command line's words: where a backend's
// typed error (client/backend) says what it cannot do or lacks, the text
// names the flag or variable that changes it.
func worded(err error) string {
	msg := err.Error()
	var (
		un      *backend.UnsupportedError
		miss    *backend.MissingError
		running *backend.RunningError
		own     error
		say     string
	)
	switch {
	case errors.As(err, &un):
		asked := featureFlags[un.Asked]
		if asked == "" {
			return msg
		}
		where := "on " + un.Backend
		if un.Flag != "" {
			where = "with " + un.Flag
		}
		own, say = un, fmt.Sprintf("%s does not apply %s: %s", asked, where, un.Instead)
	case errors.As(err, &miss) && miss.Setting == backend.Registry:
		own, say = miss, "no registry for the cluster to pull the job's image from: pass --registry HOST[:PORT][/PATH] or set XRUN_K8S_REGISTRY (docs/kubernetes.md)"
	case errors.As(err, &miss) && miss.Setting == backend.KubeContext:
		own, say = miss, "the kubeconfig has no current context: pass --context, or point KUBECONFIG at the cluster's kubeconfig (docs/kubernetes.md)"
	case errors.As(err, &running):
		own, say = running, fmt.Sprintf("job %s is %s: cancel it first, or pass --force", running.JobID, running.State)
	default:
		return msg
	}
	return strings.Replace(msg, own.Error(), say, 1)
}
