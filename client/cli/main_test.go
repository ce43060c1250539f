package cli

import (
	"os"
	"testing"

	"github.com/xrun-dev/xrun/client/backend/local"
)

// TestMain lets the test binary be what xrun run --local starts, as
// client/cmd/xrun is: the job's supervisor and its runner, found by
// os.Executable.
func TestMain(m *testing.M) {
	if code, ok := local.Role(os.Args); ok {
		// A local job's supervisor or runner, or the in-container runner.
		os.Exit(code)
	}
	os.Exit(m.Run())
}
