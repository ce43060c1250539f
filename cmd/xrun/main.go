// Command xrun packages GPU-kernel experiments into container images and
// runs them on your own Docker hosts. Called as xrun-runner (or with
// __runner first) it is the in-container runner instead; with __run-local
// or __local-job first, the runner or the supervisor of a job of xrun run
// --local (role). It is the one client package that links the runner's
// orchestrator (runner/run).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/client/backend/local"
	"github.com/xrun-dev/xrun/client/cli"
	"github.com/xrun-dev/xrun/contract"
	"github.com/xrun-dev/xrun/runner/run"
)

// abortGrace is how long a second Ctrl-C waits for the command's fast
// cleanup (kill and remove the job's container, record it cancelled)
// before xrun exits regardless.
const abortGrace = 15 * time.Second

func main() {
	if code, ok := role(os.Args); ok {
		// A local job's supervisor or runner, or the in-container runner.
		os.Exit(code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	abort := make(chan struct{})
	ctx = cli.WithAbort(ctx, abort)
	// A closed stdout (xrun submit DIR | head) is an EPIPE error to the
	// write, not a SIGPIPE death: an attached submit leaves its job
	// detached and says so.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // the command stops its job and cleans up
		<-sigs
		// Exiting here would leave the container running: the command
		// kills and removes it instead of stopping it gracefully (what
		// this is, for the command run, cli.InterruptedTwice says).
		note, cleanup := cli.InterruptedTwice(os.Args)
		fmt.Fprintln(os.Stderr, note)
		if !cleanup {
			os.Exit(contract.ExitCancelled)
		}
		close(abort)
		select {
		case <-sigs:
		case <-time.After(abortGrace):
		}
		os.Exit(contract.ExitCancelled)
	}()
	os.Exit(cli.Main(ctx, os.Args, os.Stdout, os.Stderr, os.Getenv))
}

// role runs what the xrun binary is asked to be when it is not the
// command line (args are os.Args): a local job's supervisor
// (local.SuperviseArg), a local job's runner (run.LocalMain), or the
// in-container runner (run.RunnerMain); ok is false when args ask for the
// command line. The runners stop on SIGINT and SIGTERM.
func role(args []string) (code int, ok bool) {
	switch {
	case local.IsSupervisor(args):
		return local.Supervise(args[2]), true
	case run.IsLocalRunner(args):
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run.LocalMain(ctx, args[2:], os.Stderr), true
	case run.IsRunner(args):
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run.RunnerMain(ctx, args, os.Stdout, os.Stderr), true
	}
	return 0, false
}
