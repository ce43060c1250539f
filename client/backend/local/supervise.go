package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/client/jobs"
)

// SuperviseArg, as the xrun binary's first argument with a job directory
// after it, runs Supervise on that directory.
const SuperviseArg = "__local-job"

// IsSupervisor reports whether args (os.Args) ask for Supervise.
func IsSupervisor(args []string) bool {
	return len(args) == 3 && args[1] == SuperviseArg
}

// exitNoStart is the exit code recorded for a runner that could not be
// started (as a shell says of a command it cannot run).
const exitNoStart = 127

func newCommand(argv []string) *exec.Cmd { return exec.Command(argv[0], argv[1:]...) }

// Supervise runs the runner of the job directory dir (job.json) in a
// process group of its own, with its output appended to the job's log,
// records it as started, waits for it, and records its exit code: the
// exit code, or 128 plus the signal that killed it. SIGINT, SIGTERM and
// SIGHUP sent to the supervisor go to the runner's group; the
// supervisor itself ends only after the runner. Leftovers of the runner's
// group (workers it did not stop) are killed once it has exited. It
// returns the supervisor's own exit code.
func Supervise(dir string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	fail := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintf(os.Stderr, "xrun: %s\n", msg)
		if err := writeJSON(dir, exitFile, exited{ExitCode: exitNoStart, Message: msg, FinishedAt: time.Now().UTC()}); err != nil {
			fmt.Fprintf(os.Stderr, "xrun: record the job's end: %v\n", err)
		}
		return 1
	}
	sp, err := readSpec(dir)
	if err != nil {
		return fail("read the job's %s: %v", jobFile, err)
	}
	if len(sp.Command) == 0 {
		return fail("the job's %s names no command", jobFile)
	}
	logf, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fail("open the job's log: %v", err)
	}
	defer logf.Close()
	cmd := newCommand(sp.Command)
	cmd.Dir = sp.Dir
	cmd.Env = append(os.Environ(), sp.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fail("start the runner: %v", err)
	}
	pid := cmd.Process.Pid
	st := started{PID: pid, Runner: jobs.Process(pid), Supervisor: jobs.Creator(), StartedAt: time.Now().UTC()}
	if err := writeJSON(dir, startedFile, st); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return fail("record the job as started: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			syscall.Kill(-pid, s.(syscall.Signal))
			continue
		case err = <-done:
		}
		break
	}
	ex := exited{FinishedAt: time.Now().UTC()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			ex.ExitCode, ex.Signal = 128+int(ws.Signal()), ws.Signal().String()
			ex.Message = fmt.Sprintf("the runner was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
		} else {
			ex.ExitCode = ee.ExitCode()
		}
	default:
		ex.ExitCode, ex.Message = -1, fmt.Sprintf("wait for the runner: %v", err)
	}
	// What the runner left of its group (workers it did not stop) goes
	// with it, as a container's processes go with the container.
	syscall.Kill(-pid, syscall.SIGKILL)
	if err := writeJSON(dir, exitFile, ex); err != nil {
		fmt.Fprintf(os.Stderr, "xrun: record the job's end: %v\n", err)
		return 1
	}
	return 0
}
