package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/xrun-dev/xrun/client/backend/local"
)

// TestMain lets the test binary be what xrun run --local starts, as
// client/cmd/xrun is: the job's supervisor and its runner, found by
// os.Executable.
func TestMain(m *testing.M) {
	if local.IsSupervisor(os.Args) {
		os.Exit(local.Supervise(os.Args[2]))
	}
	if IsRunner(os.Args) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := RunnerMain(ctx, os.Args, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
