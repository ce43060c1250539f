// Command xrun packages GPU-kernel experiments into container images and
// runs them on your own Docker hosts. Called as xrun-runner (or with
// __runner first) it is the in-container runner instead.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/xrun-dev/xrun/client/cli"
)

func main() {
	if cli.IsRunner(os.Args) {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := cli.RunnerMain(ctx, os.Args, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel() // the command stops its job and cleans up
		<-sigs
		fmt.Fprintln(os.Stderr, "xrun: interrupted twice: exiting at once")
		os.Exit(130)
	}()
	os.Exit(cli.Main(ctx, os.Args, os.Stdout, os.Stderr, os.Getenv))
}
