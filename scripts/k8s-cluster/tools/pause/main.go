// Command pause is the sandbox ("infra") container of the test cluster's
// pods: it holds the pod's namespaces open, reaps the zombies that a shared
// PID namespace hands it, and exits on SIGINT or SIGTERM. No pause image can
// be pulled here, so up.sh packs this binary into one and pushes it to the
// cluster's own registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
