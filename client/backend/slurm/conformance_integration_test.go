//go:build integration

package slurm

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/backendtest"
	"github.com/xrun-dev/xrun/client/store"
)

// conformanceRunner stands in for xrun-runner on the cluster: it runs the
// suite's script (XRUN_CONFORMANCE_SCRIPT, from the job's environment)
// with OUT set to the --out directory the batch script gives it.
const conformanceRunner = `#!/bin/sh
while [ $# -gt 0 ]; do
	case $1 in --out) OUT=$2; shift ;; esac
	shift
done
export OUT
exec sh -c "$XRUN_CONFORMANCE_SCRIPT"
`

// The conformance suite (client/backend/backendtest) against the one-node
// cluster of scripts/slurm-cluster, its commands on this machine.
func TestConformance(t *testing.T) {
	tmp := t.TempDir()
	startCluster(t, tmp)
	code, runner := stubExperiment(t, tmp, conformanceRunner)
	b := &Backend{Shell: LocalShell{}, Settings: Settings{Dir: filepath.Join(tmp, "jobs")}, Poll: 200 * time.Millisecond}
	backendtest.Run(t, backendtest.Place{Backend: b, Capabilities: Capabilities(""), Timeout: 2 * time.Minute,
		Spec: func(t *testing.T, j *store.Job, script string) backend.Spec {
			return backend.Spec{Name: "xrun-conformance-" + j.ID, Code: code, Runner: runner, Env: []string{"XRUN_CONFORMANCE_SCRIPT=" + script}}
		}})
}
