// Command xrun-runner runs an experiment: it checks every implementation
// against the reference, times them, and writes results.json.
//
//	xrun-runner --experiment /xrun/exp --out /xrun/out
//
// Flags override the XRUN_* environment (docs/architecture.md); the exit
// code says how the run went (run.ExitCode).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/xrun-dev/xrun/runner/run"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run.Main(ctx, "xrun-runner", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
