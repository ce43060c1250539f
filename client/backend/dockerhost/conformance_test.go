//go:build integration

package dockerhost_test

import (
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/backendtest"
	"github.com/xrun-dev/xrun/client/backend/dockerhost"
	"github.com/xrun-dev/xrun/client/connect"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/internal/testenv"
)

// The Docker host passes the backends' conformance suite against the real
// daemon: its jobs are containers of a busybox image whose entrypoint runs
// the case's script.
func TestConformance(t *testing.T) {
	testenv.RequireDocker(t)
	host := testenv.LocalHost
	image := testenv.EnsureScriptImage(t, host)
	cli, err := connect.NewClient(connect.DockerHost{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	b := dockerhost.New(engine.FromClient(host, cli))
	backendtest.Run(t, backendtest.Place{Backend: b, Capabilities: dockerhost.Capabilities,
		Spec: func(t *testing.T, j *store.Job, script string) backend.Spec {
			return backend.Spec{Name: "xrun-conformance-" + j.ID, Image: image,
				Env:    []string{testenv.ScriptEnv + "=" + script, "OUT=" + contract.OutDir},
				Labels: map[string]string{contract.LabelJob: j.ID, contract.LabelExperiment: j.Experiment, contract.LabelOwner: j.Owner, "dev.xrun.test": "conformance"}}
		}})
}
