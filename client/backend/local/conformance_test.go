package local

import (
	"path/filepath"
	"testing"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/backend/backendtest"
	"github.com/xrun-dev/xrun/client/store"
)

func TestConformance(t *testing.T) {
	b := newBackend(t)
	backendtest.Run(t, backendtest.Place{Backend: b, Capabilities: Capabilities,
		Spec: func(t *testing.T, j *store.Job, script string) backend.Spec {
			out := filepath.Join(t.TempDir(), "out")
			return backend.Spec{Name: "xrun-conformance-" + j.ID, Command: []string{"/bin/sh", "-c", script}, Env: []string{"OUT=" + out}, OutDir: out}
		}})
}
