package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// initSignals receives PID 1's signals from this package's init on: a
// SIGTERM (a cancel) that came before any handler would make Go's runtime
// raise it again, which PID 1 ignores, and then exit with code 2 and no
// word, read as a failed job. Package init runs before the runner's own
// packages are set up, so the window is the runtime's start alone.
var initSignals chan os.Signal

func init() {
	if os.Getpid() == 1 {
		initSignals = make(chan os.Signal, 32)
		signal.Notify(initSignals, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	}
}

// Init makes a runner that is its container's first process (PID 1) the
// container's init: it starts the runner again as its child, passes the
// child every signal (docker stop's SIGTERM among them), reaps the
// processes that workers leave behind (their orphans come to PID 1 and
// would otherwise stay as zombies, holding pids), and once the runner has
// exited kills whatever is left before the container ends. It returns the
// exit code to exit with, and false when this process is not PID 1 (then
// it does nothing).
func Init() (code int, isInit bool) {
	if os.Getpid() != 1 {
		return 0, false
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "/proc/self/exe"
	}
	sigs := initSignals
	child, err := syscall.ForkExec(exe, os.Args, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "xrun-runner: start the runner under its init: %v\n", err)
		return 4, true
	}
	var status syscall.WaitStatus
	for done := false; !done; {
		sig := <-sigs
		if sig != syscall.SIGCHLD {
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(child, s)
			}
			continue
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if err != nil || pid <= 0 {
				break
			}
			if pid == child {
				status, done = ws, true
			}
		}
	}
	// Nothing of the job outlives its runner: kill(-1) from PID 1 reaches
	// every other process of the container.
	_ = syscall.Kill(-1, syscall.SIGKILL)
	reapAll(2 * time.Second)
	switch {
	case status.Exited():
		return status.ExitStatus(), true
	case status.Signaled() && (status.Signal() == syscall.SIGTERM || status.Signal() == syscall.SIGINT):
		// A stop that came before the runner could catch it: cancelled,
		// in the runner's words (contract.ExitCancelled).
		return 130, true
	case status.Signaled():
		return 128 + int(status.Signal()), true
	}
	return 4, true
}

// reapAll waits for the killed processes until none is left or limit passes.
func reapAll(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.ECHILD {
			return
		}
		if pid <= 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
}
