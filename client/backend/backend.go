// Package backend is the contract between xrun's job lifecycle and the
// places jobs run: a Docker host (client/backend/dockerhost), a
// Kubernetes cluster (client/backend/kube) or this machine without a
// container (client/backend/local). A backend makes, starts,
// watches, stops and removes one job's container and hands back its logs
// and the runner's output directory; what a job's status means, when its
// results are fetched and what is recorded is client/lifecycle's alone.
package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/xrun-dev/xrun/client/buildctx"
	"github.com/xrun-dev/xrun/client/engine"
	"github.com/xrun-dev/xrun/client/store"
	"github.com/xrun-dev/xrun/contract"
)

// ThisHost is this machine's name, as the records of jobs run on it say
// it (local://NAME, slurm+local://NAME).
func ThisHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// ErrNotFound is returned (wrapped) when the backend no longer has the job.
var ErrNotFound = errors.New("not found")

// ErrNotStarted is returned (wrapped) for the log of a job whose runner
// has not started: it waits for its container, or it ended (cancelled, past
// its deadline, its node gone) before the container was created, and has no
// log and no output. It is an ErrNotFound.
var ErrNotStarted error = notStarted{}

type notStarted struct{}

func (notStarted) Error() string        { return "its runner has not started" }
func (notStarted) Is(target error) bool { return target == ErrNotFound }

// ErrUnreachable is returned (wrapped) when the host or cluster does not
// answer, or stopped answering (a daemon restart): it may come back.
var ErrUnreachable = errors.New("unreachable")

// Standbys is what a backend that keeps warm standby containers does (a
// Docker host): a submit claims the one a previous submit of its
// experiment and owner left, and an attached job leaves one for the next.
// The lifecycle asks for it where the backend has it.
type Standbys interface {
	// Claim claims a waiting standby of experiment and owner; ok is
	// false when there is none.
	Claim(ctx context.Context, experiment, owner string) (st Standby, ok bool)
	// Leave makes a standby for the job spec s would run.
	Leave(ctx context.Context, s Spec) error
}

// Standby is a standby a submit claimed, until it is handed its job or
// discarded.
type Standby interface {
	// ID is the job id the standby was made for, which the job takes.
	ID() string
	// Hand gives the standby job j to run from s; ErrStandbyMismatch (and
	// the standby discarded) when it was made for other settings.
	Hand(ctx context.Context, j *store.Job, s Spec) error
	// Discard removes the standby.
	Discard(ctx context.Context)
}

// ErrStandbyMismatch says a claimed standby was made for other settings
// than the job's (an edited spec, a new image, other GPUs), or would stop
// waiting too soon: it is discarded and the job gets a container of its
// own.
var ErrStandbyMismatch = errors.New("the standby was made for other settings")

// RefusedError is a scheduler's refusal, before anything is submitted, of
// a job it can never run as asked (more GPUs than a partition's nodes
// have, a time limit past its maximum): Reason is the scheduler's own
// words.
type RefusedError struct {
	// Where names the cluster and partition ("Slurm partition debug").
	Where  string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s cannot run this job: %s", e.Where, e.Reason)
}

// MissingError says a backend lacks a setting it needs to go on.
type MissingError struct {
	Setting Setting
	// Why the setting is needed.
	Why string
}

func (e *MissingError) Error() string { return fmt.Sprintf("no %s: %s", e.Setting, e.Why) }

// Setting is a backend setting that may be missing.
type Setting int

const (
	// Registry is where a cluster pulls job images from.
	Registry Setting = iota + 1
	// KubeContext is the kubeconfig's context that names the cluster.
	KubeContext
)

// Settings lists every setting, in the order a refusal names the first
// one missing.
var Settings = []Setting{Registry, KubeContext}

func (s Setting) String() string {
	switch s {
	case Registry:
		return "registry"
	case KubeContext:
		return "kubeconfig context"
	}
	return fmt.Sprintf("setting %d", int(s))
}

// RunningError is Remove's refusal, without force, of a job that has not
// ended.
type RunningError struct {
	JobID string
	// State is the backend's word for the job's state.
	State string
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("job %s is %s: cancel it first", e.JobID, e.State)
}

// CreateTimeout bounds a create request that ctx (Ctrl-C) does not cut short.
const CreateTimeout = 2 * time.Minute

// CleanupTimeout bounds the removal of what a failed or interrupted create
// left, which runs after ctx is done.
const CleanupTimeout = 30 * time.Second

// Backend is a place jobs run. Each method takes the job's record, whose
// Host, ContainerID and ContainerName the backend set in Create.
type Backend interface {
	// Where names the Docker host or cluster as job records do (store.Job.Host).
	Where() string
	// Create makes the job from spec without starting it, with the job's
	// code in it, and records its handle in j (ContainerID, ContainerName).
	// It leaves nothing behind when it fails or ctx ends on the way: the
	// create request itself runs to its end under CreateTimeout (one cut
	// off can still have made the job), and what it made is then removed
	// under CleanupTimeout, found by the job's label.
	Create(ctx context.Context, j *store.Job, spec Spec) error
	// Start starts a created job.
	Start(ctx context.Context, j *store.Job) error
	// State reads the job's state; ErrNotFound when the backend no longer has it.
	State(ctx context.Context, j *store.Job) (State, error)
	// Wait blocks until the job's runner has exited (or ctx ends) and
	// returns the state then.
	Wait(ctx context.Context, j *store.Job) (State, error)
	// Logs writes the job's output until it is done (with Follow, until
	// the job ends or ctx does).
	Logs(ctx context.Context, j *store.Job, opts LogOptions, stdout, stderr io.Writer) error
	// CopyOut returns a tar of the runner's output directory whose entries
	// are named out/...; ErrNotFound when the runner wrote none.
	CopyOut(ctx context.Context, j *store.Job) (io.ReadCloser, error)
	// Stop asks the runner to stop (SIGTERM: it writes cancelled results)
	// and kills it after grace. A backend may delete a job whose runner
	// has not started instead, as it has nothing to keep: Stop returns
	// ErrNotStarted then, and State ErrNotFound.
	Stop(ctx context.Context, j *store.Job, grace time.Duration) error
	// Remove deletes everything the job left on the backend; force stops
	// a running job first.
	Remove(ctx context.Context, j *store.Job, force bool) error
	// List returns the xrun jobs the backend has (finished ones too when
	// all is set), described from the backend alone: jobs submitted from
	// other machines show up this way.
	List(ctx context.Context, all bool) ([]Listed, error)
}

// Collector is a Backend that reads an ended job's log and output in one
// request: a Kubernetes pod's log, which carries the runner's output
// directory (the log outlives the pod's files; contract.WriteOut), or one
// ssh session to a Slurm login node, where each session costs seconds.
// Collect returns the log, and the output as CopyOut would (nil and
// ErrNotFound when the runner wrote none). The log is nil only when the
// job has none, and err says why. The lifecycle uses it in place of Logs
// then CopyOut.
type Collector interface {
	Collect(ctx context.Context, j *store.Job) (logs []byte, out io.ReadCloser, err error)
}

// Spec is everything a job is created with.
type Spec struct {
	// Name names the container or Kubernetes Job ("xrun-<experiment>-<id>").
	Name string
	// Image is the job image (everything but the code).
	Image string
	// Code is the experiment's code, put at contract.ExperimentDir.
	Code   *buildctx.Context
	Env    []string // NAME=value
	Labels map[string]string
	// GPUs is nil for a CPU job.
	GPUs *GPUs
	// GPUType is resources.gpu_type: a GPU name the node must have.
	GPUType string
	// CPUs is how many CPUs the job asks for (resources.cpus or --cpus;
	// 0: the place's default). A Docker host reserves them through its
	// Preparer (CPUSet); a Slurm job gets them as --cpus-per-task, a
	// Kubernetes pod as its CPU request and limit.
	CPUs        int
	ShmBytes    int64
	MemoryBytes int64
	PidsLimit   int64
	// CPUSet is the host CPUs the job runs on ("2-3"; "": all of them).
	CPUSet string
	// Root runs the runner as root with the default capabilities instead
	// of as contract.JobUser without any.
	Root bool
	// CapAdd adds capabilities to a Root job's (a job run as
	// contract.JobUser has none to add to).
	CapAdd []string
	// NoNetwork runs the job without a network.
	NoNetwork bool
	// Timeout is the job's timeout (0: none).
	Timeout time.Duration
	// PendingLimit is how long a cluster's job with a timeout may wait
	// for a node before the cluster drops it (0: its backend's default).
	PendingLimit time.Duration
	// PostToken is the bearer token for XRUN_POST_URL, for the runner
	// alone: a Docker host gets it as contract.PostTokenFile, which the
	// container's configuration does not show.
	PostToken string
	// CacheVolume, when set, is the named volume of compile caches kept
	// across jobs (Triton, TorchInductor, CUDA extensions), mounted at
	// contract.CacheDir, made with CacheLabels on first use.
	CacheVolume string
	CacheLabels map[string]string
	// CacheLimit is the most bytes the cache may hold as the job starts
	// (contract.EnvCacheLimit; 0: no limit).
	CacheLimit int64
	// HostName is the name of the machine the job runs on where the client
	// knows it (a Docker host's); a cluster's backend names the node.
	HostName string
	// WaitForNode (--queue) lets a cluster's job ask for what no node
	// offers now, to wait for one (an autoscaled cluster adds it); without
	// it such a request is refused before anything is made.
	WaitForNode bool
	// Command and OutDir are a job that runs as a process of this
	// machine (client/backend/local), in place of Image and Code: the
	// runner's command line, run with Env added to the environment of
	// the xrun that starts it, and the directory it writes its output to
	// (what CopyOut returns).
	Command []string
	OutDir  string
	// Push is where a cluster's job image goes (nil on a Docker host,
	// which runs the image it built).
	Push *Push
	// Runner is the path on this machine of the static runner, for a
	// place that runs it without an image (a Slurm cluster's bare
	// runtime): it is copied there with Code.
	Runner string
}

// Push is where a submit puts a cluster's job image: built on the Docker
// host Builder, pushed to Registry, and pulled by the cluster with the
// namespace's docker-registry secret PullSecret ("": none). It is one
// submit's, never the backend's: two submits in one process may push to
// two registries.
type Push struct {
	Builder    engine.Engine
	Registry   string
	PullSecret string
}

// Execer is a Backend that runs a command beside a running job, as the
// job's experiment code runs (its user, its directory, none of the
// runner's privileges): xrun exec.
type Execer interface {
	Exec(ctx context.Context, j *store.Job, e Exec) (exitCode int, err error)
}

// Exec is a command to run beside a job (Execer).
type Exec struct {
	Cmd []string
	// Stdin, when set, is the command's input; TTY gives it a terminal
	// (stdout then has both streams).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
}

// Archive is a job image kept as a file where a backend's jobs load it
// from (a Slurm cluster's docker runtime): one per image, shared by the
// jobs of that image, removed by xrun prune once no job waits for it.
type Archive struct {
	Name  string
	Bytes int64
	// Modified is when it was last copied or used by a submit.
	Modified time.Time
	// InUse says a job that has not ended loads it.
	InUse bool
}

// Preparer is a Backend that readies its host for a job once the job is
// recorded and before it is made: it reserves the job's GPUs (a Docker
// host assigns devices that no other xrun job holds) and names the GPU
// model the job's compile caches are keyed by.
type Preparer interface {
	Prepare(ctx context.Context, r PrepareRequest) (Reservation, error)
}

// Releaser is a Preparer that frees what it reserved for a job from the
// job's record alone: the command that records a detached job's end (a
// status, a wait, a ps), whose client is not the one that submitted it.
type Releaser interface {
	Release(ctx context.Context, j *store.Job) error
}

// PrepareRequest is what a job asks of its host.
type PrepareRequest struct {
	Job *store.Job
	// Image is the job image's reference on the Docker host that built it.
	Image string
	// GPUs is nil for a CPU job; GPUType is resources.gpu_type.
	GPUs    *GPUs
	GPUType string
	// CPUs is resources.cpus: how many CPUs to reserve (0: the default,
	// a GPU job's share of the host; none for a CPU job).
	CPUs int
	// Queue waits for GPUs and CPUs that other jobs hold instead of failing.
	Queue bool
	// Log receives progress ("job ID gets GPU 1 (NVIDIA H100) on HOST").
	Log io.Writer
}

// Reservation is what a Preparer reserved for a job.
type Reservation struct {
	// Release frees it (never nil; a no-op when nothing is held).
	Release func()
	// GPUModel keys the compile caches: "cpu" for a CPU job, the GPUs'
	// name on a Docker host, what gpu_type names on a cluster.
	GPUModel string
	// GPUs are the devices the host assigned, in place of the request
	// (nil: the request as it was), and GPUIDs their indices on the host
	// ("0,2") for the job's record.
	GPUs   *GPUs
	GPUIDs string
	// CPUSet is the CPUs the job runs on ("2-3"; "": all of them).
	CPUSet string
}

// NoReservation is what a backend without a Preparer reserves: nothing,
// and the GPU model "cpu" or "gpu".
func NoReservation(gpus *GPUs) Reservation {
	model := "cpu"
	if gpus != nil {
		model = "gpu"
	}
	return Reservation{Release: func() {}, GPUModel: model}
}

// Handler is a Backend that names what runs a job in its own words
// ("process 4242"), where "container NAME" or "Job NAME" would not fit.
type Handler interface {
	Handle(j *store.Job) string
}

// GPUs asks for GPUs: a count, device ids, or all (Count -1).
type GPUs struct {
	Count int
	IDs   []string
}

// Phase is where a job is in its life.
type Phase string

const (
	// Pending: created and not running yet (not started, or waiting for
	// a node, an image pull or a GPU).
	Pending Phase = "pending"
	Running Phase = "running"
	// Exited: the runner's process ended (ExitCode says how).
	Exited Phase = "exited"
)

// State is a job's state as its backend reports it.
type State struct {
	Phase Phase
	// Detail is the backend's own word for the state ("created",
	// "restarting", "ImagePullBackOff"), and Message why, when it says.
	Detail  string
	Message string
	// Waiting says a Pending job is held by its cluster's scheduler
	// until a node can take it; Message says why ("Resources").
	Waiting bool
	// ExitCode and OOMKilled describe an exited job.
	ExitCode  int
	OOMKilled bool
	StartedAt time.Time
	// FinishedAt is when an exited job ended.
	FinishedAt time.Time
	// MemoryBytes is the job's memory limit (0: none).
	MemoryBytes int64
	// Timeout is the timeout the job was created with, as recorded on the
	// backend (so that any client enforces it), or "".
	Timeout string
	// Enforced is true when the backend itself stops the job at its
	// timeout (a Kubernetes Job's deadline); a client stops it otherwise.
	Enforced bool
	// TimedOut is true when the backend stopped the job for its timeout.
	TimedOut bool
	// NoNode is true when the place dropped the job before any node took
	// it (a Kubernetes Job's deadline, a Slurm job's pending limit):
	// Message says so in one sentence, with the scheduler's reason where
	// it gave one ("no node took it before ...: 0/1 nodes are available").
	NoNode bool
}

// Finished reports whether the runner has exited.
func (s State) Finished() bool { return s.Phase == Exited }

// Listed is a job as a backend's List describes it: the record it would
// have, and its state.
type Listed struct {
	Job   store.Job
	State State
}

// LogOptions select which logs to read.
type LogOptions struct {
	Follow     bool
	Tail       string // "all" (or "") or a number of lines
	Timestamps bool
}

// WhereEnv is the environment that says where a job runs, as its backend
// names it: the image's reference, the machine's name and the compile
// cache (contract.EnvImageRef, EnvHostName, EnvCacheVolume with
// EnvCacheLimit), each left out when empty. The rest of the job's
// environment (Spec.Env) is the same on every backend.
func (s Spec) WhereEnv(imageRef, hostName, cacheVolume string) []string {
	var env []string
	if imageRef != "" {
		env = append(env, contract.EnvImageRef+"="+imageRef)
	}
	if hostName != "" {
		env = append(env, contract.EnvHostName+"="+hostName)
	}
	if cacheVolume != "" {
		env = append(env, contract.EnvCacheVolume+"="+cacheVolume, contract.EnvCacheLimit+"="+strconv.FormatInt(s.CacheLimit, 10))
	}
	return env
}
