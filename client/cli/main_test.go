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
// client/cmd/xrun is: the job's supervisor and its runner, found by
// os.Executable.
func TestMain(m *testing.M) {
	if local.IsSupervisor(os.Args) {
		os.Exit(local.Supervise(os.Args[2]))
	}
	if local.IsRunner(os.Args) || run.IsRunner(os.Args) {
		// The runner of a local job, or the in-container runner.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := 0
		if local.IsRunner(os.Args) {
			code = local.RunnerMain(ctx, os.Args[2:], os.Stderr)
		} else {
			code = run.RunnerMain(ctx, os.Args, os.Stdout, os.Stderr)
		}
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
