// Package local runs jobs as processes of this machine, without a
// container (xrun run --local): the backend.Backend whose job is the
// runner started beside xrun. Each job is a directory under Root, named
// by the job's id:
//
//	job.json      what Create was given: the runner's command, what it
//	              adds to the environment, its output directory, and the
//	              job as List describes it
//	log           the runner's stdout and stderr
//	started.json  the runner's pid (the leader of its own process group)
//	              and the identities of the runner and its supervisor,
//	              written once the runner runs
//	exit.json     the runner's exit code, written when it has exited
//
// Start runs a supervisor (Supervise: the xrun binary with SuperviseArg)
// in a session of its own, so that neither the terminal's Ctrl-C nor the
// end of the xrun that started it reaches it. The supervisor starts the
// runner in a process group of its own, waits for it and records how it
// ended, so that any xrun, in any shell, reads the job's state from the
// directory alone.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/client/backend"
	"github.com/xrun-dev/xrun/client/store"
)

// Scheme starts the Host of a local job's record: local://HOSTNAME.
const Scheme = "local://"

// IsRef reports whether a job record's Host names a machine's local
// backend.
func IsRef(host string) bool { return strings.HasPrefix(host, Scheme) }

// Ref is the Host of a job run on the machine called hostname.
func Ref(hostname string) string { return Scheme + hostname }

// Files of a job directory.
const (
	jobFile     = "job.json"
	LogFile     = "log"
	startedFile = "started.json"
	exitFile    = "exit.json"
)

// Capabilities is what a process of this machine lacks: it runs as the
// user, in this machine's environment, without a container.
var Capabilities = backend.Capabilities{Name: "this machine", Flag: "--local", Lacks: map[backend.Feature]string{
	backend.NoNetwork:      "the runner is a process of this machine, with its network",
	backend.CPUReservation: "the runner is a process of this machine, on its CPUs",
	backend.RunAsRoot:      "the runner runs as your user",
	backend.BaseImage:      "the runner runs without a container, with this machine's Python",
}, StoppedBy: "a kill of the runner, or a shutdown of this machine"}

// Backend runs jobs on this machine.
type Backend struct {
	// Root holds the job directories.
	Root string
	// Host is this machine's name (Where is local://Host).
	Host string
	// Supervisor is the command that supervises a job, the job's
	// directory added as its last argument; nil runs this binary with
	// SuperviseArg.
	Supervisor []string
	// Poll is how often Wait, Logs and Stop look at the job again (0:
	// 100 ms).
	Poll time.Duration

	pids sync.Map // job id: the runner's pid, for Handle
}

var _ backend.Backend = (*Backend)(nil)

// New returns the backend of the job directories under root.
func New(root string) *Backend { return &Backend{Root: root, Host: backend.ThisHost()} }

func (b *Backend) Where() string { return Ref(b.Host) }

// Handle names what runs job j: its runner's process, as long as
// this Backend has seen it (its directory may be gone since).
func (b *Backend) Handle(j *store.Job) string {
	if st, err := readStarted(b.dir(j)); err == nil {
		b.pids.Store(j.ID, st.PID)
	}
	if pid, ok := b.pids.Load(j.ID); ok {
		return fmt.Sprintf("process %d", pid)
	}
	return "the process"
}

// spec is job.json.
type spec struct {
	Job     store.Job `json:"job"`
	Command []string  `json:"command"`
	Env     []string  `json:"env,omitempty"`
	// Dir is the runner's working directory: where xrun was run.
	Dir    string `json:"dir"`
	OutDir string `json:"out_dir"`
}

// started is started.json.
type started struct {
	PID int `json:"pid"`
	// Runner and Supervisor identify the two processes as store.Process
	// does, so that a pid used again is not taken for them.
	Runner     string    `json:"runner"`
	Supervisor string    `json:"supervisor"`
	StartedAt  time.Time `json:"started_at"`
}

// exited is exit.json.
type exited struct {
	ExitCode   int       `json:"exit_code"`
	Signal     string    `json:"signal,omitempty"`
	Message    string    `json:"message,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
}

// dir is job j's directory; "" for a record whose handle is not a plain
// name (edited by hand), which no method then touches.
func (b *Backend) dir(j *store.Job) string {
	id := j.ContainerID
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || b.Root == "" {
		return ""
	}
	return filepath.Join(b.Root, id)
}

// jobDir is dir, or ErrNotFound when the job has no directory.
func (b *Backend) jobDir(j *store.Job) (string, error) {
	d := b.dir(j)
	if d == "" {
		return "", fmt.Errorf("job %s has no process on %s (%w)", j.ID, b.Where(), backend.ErrNotFound)
	}
	if _, err := os.Stat(filepath.Join(d, jobFile)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("job %s: its directory %s is gone (%w)", j.ID, d, backend.ErrNotFound)
		}
		return "", err
	}
	return d, nil
}

// Create makes the job's directory with what Start runs: s.Command with
// s.Env added to the environment of the xrun that starts it, in this
// xrun's working directory, writing its output to s.OutDir.
func (b *Backend) Create(ctx context.Context, j *store.Job, s backend.Spec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(s.Command) == 0 || s.OutDir == "" {
		return errors.New("a local job needs the runner's command and output directory")
	}
	if err := Capabilities.Refuse(s.Asks()...); err != nil {
		return err
	}
	if j.ID == "" || strings.ContainsAny(j.ID, `/\`) || strings.HasPrefix(j.ID, ".") {
		return fmt.Errorf("job id %q cannot name a directory", j.ID)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("read the working directory: %w", err)
	}
	if err := os.MkdirAll(b.Root, 0o755); err != nil {
		return fmt.Errorf("make the local jobs' directory: %w", err)
	}
	dir := filepath.Join(b.Root, j.ID)
	// The environment may carry tokens: the directory is the user's alone.
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("make the job's directory: %w", err)
	}
	j.ContainerID, j.ContainerName = j.ID, s.Name
	desc := *j
	desc.Status, desc.Error, desc.Finished, desc.ExitCode, desc.Submit = "", "", nil, nil, nil
	sp := spec{Job: desc, Command: s.Command, Env: s.Env, Dir: cwd, OutDir: s.OutDir}
	err = writeJSON(dir, jobFile, sp)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			err = f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		j.ContainerID, j.ContainerName = "", ""
		return fmt.Errorf("write the job's directory: %w", err)
	}
	return nil
}

// Start runs the supervisor and returns once the runner runs (or the
// supervisor recorded why it could not start it).
func (b *Backend) Start(ctx context.Context, j *store.Job) error {
	dir, err := b.jobDir(j)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, startedFile)); err == nil {
		return fmt.Errorf("job %s was started already", j.ID)
	}
	argv := b.Supervisor
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the xrun binary to supervise the job: %w", err)
		}
		argv = []string{exe, SuperviseArg}
	}
	logf, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the job's log: %w", err)
	}
	defer logf.Close()
	cmd := newCommand(append(append([]string(nil), argv...), dir))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the job's supervisor: %w", err)
	}
	// Reaped here while this xrun lives; it is the supervisor's own
	// files that say how the job went.
	gone := make(chan struct{})
	go func() { cmd.Wait(); close(gone) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(time.Minute)
	for {
		if st, err := readExit(dir); err == nil {
			if _, serr := readStarted(dir); serr != nil {
				return fmt.Errorf("the job's runner did not start: %s", st.Message)
			}
			return nil
		}
		if _, err := readStarted(dir); err == nil {
			return nil
		}
		select {
		case <-gone:
			if _, err := readStarted(dir); err == nil {
				return nil
			}
			if _, err := readExit(dir); err == nil {
				continue
			}
			return fmt.Errorf("the job's supervisor ended before the runner started: %s", lastLine(filepath.Join(dir, LogFile)))
		case <-timeout:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return errors.New("the job's supervisor did not start the runner within a minute")
		case <-ctx.Done():
			// The lifecycle removes what was made (Remove kills it).
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (b *Backend) State(ctx context.Context, j *store.Job) (backend.State, error) {
	dir, err := b.jobDir(j)
	if err != nil {
		return backend.State{}, err
	}
	return stateOf(dir), nil
}

// stateOf reads a job directory's state.
func stateOf(dir string) backend.State {
	// The runner stops itself at the spec's resources.timeout; a local
	// job has no other timeout for a client to keep.
	s := backend.State{Enforced: true}
	st, serr := readStarted(dir)
	if serr == nil {
		s.StartedAt = st.StartedAt
	}
	// Whether they run is asked before the exit file is read: the
	// supervisor writes that file, then ends, so one that has ended has
	// written it by then if it ever will. Asked after, a supervisor that
	// wrote it and ended in between reads as lost.
	running := serr == nil && (processAlive(st.Runner, st.PID) || processAlive(st.Supervisor, 0))
	if ex, err := readExit(dir); err == nil {
		s.Phase, s.Detail, s.ExitCode, s.Message, s.FinishedAt = backend.Exited, "exited", ex.ExitCode, ex.Message, ex.FinishedAt
		return s
	}
	if serr != nil {
		s.Phase, s.Detail = backend.Pending, "created"
		return s
	}
	if running {
		s.Phase, s.Detail = backend.Running, "running"
		return s
	}
	// Both ended and nothing says how: the supervisor was killed too (a
	// kill of its session), or the machine restarted.
	s.Phase, s.Detail, s.ExitCode = backend.Exited, "lost", -1
	s.Message = fmt.Sprintf("the runner (pid %d) and its supervisor ended without recording an exit code: killed together, or the machine restarted", st.PID)
	if fi, err := os.Stat(filepath.Join(dir, LogFile)); err == nil {
		s.FinishedAt = fi.ModTime().UTC()
	}
	return s
}

// processAlive is alive; a test makes a process end at the moment it is
// asked about.
var processAlive = alive

// alive reports whether the process id names (store.Process) runs; pid,
// when id cannot be told, is asked instead.
func alive(id string, pid int) bool {
	if id != "" {
		return !store.CreatorGone(id)
	}
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Wait polls the job's directory until its runner has exited.
func (b *Backend) Wait(ctx context.Context, j *store.Job) (backend.State, error) {
	dir, err := b.jobDir(j)
	if err != nil {
		return backend.State{}, err
	}
	for {
		s := stateOf(dir)
		if s.Finished() {
			return s, nil
		}
		if s.Phase == backend.Pending {
			// Never started: it does not start by itself.
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(b.poll()):
		}
		if _, err := os.Stat(dir); err != nil {
			return backend.State{}, fmt.Errorf("job %s: its directory is gone (%w)", j.ID, backend.ErrNotFound)
		}
	}
}

func (b *Backend) poll() time.Duration {
	if b.Poll > 0 {
		return b.Poll
	}
	return 100 * time.Millisecond
}

// Logs writes the job's log (both of the runner's streams) to stdout;
// with Follow it goes on until the runner has exited. A local log has
// has recorded the runner's end.
func (b *Backend) Stop(ctx context.Context, j *store.Job, grace time.Duration) error {
	dir, err := b.jobDir(j)
	if err != nil {
		return err
	}
	st, err := readStarted(dir)
	if err != nil || stateOf(dir).Finished() || !alive(st.Runner, st.PID) {
		return nil // never started, or ended already
	}
	syscall.Kill(-st.PID, syscall.SIGTERM)
	if b.waitExit(ctx, dir, grace) {
		return nil
	}
	return b.kill(ctx, dir, st)
}

// kill sends SIGKILL to the runner's process group and waits a little
// for the supervisor to record its end.
func (b *Backend) kill(ctx context.Context, dir string, st started) error {
	if alive(st.Runner, st.PID) {
		syscall.Kill(-st.PID, syscall.SIGKILL)
	}
	if !b.waitExit(context.WithoutCancel(ctx), dir, 10*time.Second) {
		return fmt.Errorf("the runner (pid %d) did not end after SIGKILL", st.PID)
	}
	return nil
}

// waitExit waits up to d (or until ctx ends) for the job to have ended.
func (b *Backend) waitExit(ctx context.Context, dir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if stateOf(dir).Finished() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return stateOf(dir).Finished()
		case <-time.After(min(b.poll(), 50*time.Millisecond)):
		}
	}
}

// Remove deletes the job's directory (the output directory, which the
// user named, stays); force kills a running job first.
func (b *Backend) Remove(ctx context.Context, j *store.Job, force bool) error {
	dir, err := b.jobDir(j)
	if err != nil {
		if d := b.dir(j); d != "" {
			os.RemoveAll(d) // a directory Create left without its job.json
		}
		return err
	}
	if s := stateOf(dir); s.Phase == backend.Running {
		if !force {
			return &backend.RunningError{JobID: j.ID, State: "running"}
		}
		st, _ := readStarted(dir)
		if err := b.kill(ctx, dir, st); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the directory of job %s: %w", j.ID, err)
	}
	return nil
}

// List returns the jobs under Root (the finished ones too with all).
func (b *Backend) List(ctx context.Context, all bool) ([]backend.Listed, error) {
	entries, err := os.ReadDir(b.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the local jobs in %s: %w", b.Root, err)
	}
	var out []backend.Listed
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(b.Root, e.Name())
		sp, err := readSpec(dir)
		if err != nil {
			continue // being made, or being removed
		}
		s := stateOf(dir)
		if !all && s.Finished() {
			continue
		}
		j := sp.Job
		j.Host, j.ContainerID = b.Where(), e.Name()
		out = append(out, backend.Listed{Job: j, State: s})
	}
	return out, nil
}

func readSpec(dir string) (spec, error) {
	var s spec
	return s, readJSON(dir, jobFile, &s)
}

func readStarted(dir string) (started, error) {
	var s started
	return s, readJSON(dir, startedFile, &s)
}

func readExit(dir string) (exited, error) {
	var e exited
	return e, readJSON(dir, exitFile, &e)
}

func readJSON(dir, name string, v any) error {
	if dir == "" {
		return os.ErrNotExist
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// writeJSON writes dir/name atomically: a reader in another xrun sees
// the whole file or none.
func writeJSON(dir, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return store.WriteAtomic(filepath.Join(dir, name), 0o600, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
}

// lastLine is the last non-empty line of the file at path, or a word
// saying there is none.
func lastLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "nothing in its log"
}
