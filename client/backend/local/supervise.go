package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/runner/sandbox"
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
// supervisor itself ends only after the runner. Once the runner has exited,
// everything it left is killed before the end is recorded, as a
// container's processes go with the container: its process group, and
// (Linux) every process that left the group, a daemon in a session of its
// own included, which the supervisor adopts as their reaper. So no process
// of the job is left to rewrite the output directory once the client sees
// the job ended and copies it. It returns the supervisor's own exit code.
func Supervise(dir string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := sandbox.AdoptOrphans(); err != nil {
		fmt.Fprintf(os.Stderr, "xrun: warning: processes that leave the runner's process group may outlive the job: %v\n", err)
	}
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
	st := started{PID: pid, Runner: store.Process(pid), Supervisor: store.Creator(), StartedAt: time.Now().UTC()}
	if err := writeJSON(dir, startedFile, st); err != nil {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		return fail("record the job as started: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	reap := time.NewTicker(time.Second)
	defer reap.Stop()
	for {
		select {
		case s := <-sigs:
			syscall.Kill(-pid, s.(syscall.Signal))
			continue
		case <-reap.C:
			sandbox.ReapAdopted(pid)
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
	// What the runner left (workers it did not stop, daemons of the
	// experiment's code) goes with it.
	syscall.Kill(-pid, syscall.SIGKILL)
	if left := sandbox.KillDescendants(10 * time.Second); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "xrun: killed %d process(es) the job left running after its runner ended (%s)\n", len(left), strings.Join(left, ", "))
	}
	if err := writeJSON(dir, exitFile, ex); err != nil {
		fmt.Fprintf(os.Stderr, "xrun: record the job's end: %v\n", err)
		return 1
	}
	return 0
}
