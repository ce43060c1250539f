package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/runner/run"
)

// TestMain lets the test binary be what xrun run --local starts, as
// cmd/xrun is: the job's supervisor and its runner, found by
// os.Executable.
func TestMain(m *testing.M) {
	// What cmd/xrun's role does, for the roles these tests start.
	switch {
	case local.IsSupervisor(os.Args):
		os.Exit(local.Supervise(os.Args[2]))
	case run.IsLocalRunner(os.Args):
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run.LocalMain(ctx, os.Args[2:], os.Stderr)
		stop()
		os.Exit(code)
	case run.IsRunner(os.Args):
		os.Exit(run.RunnerMain(context.Background(), os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
