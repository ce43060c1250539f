// Package engine is xrun's narrow interface over the Docker Engine API: the
// few calls that building an experiment image and running it as a job need.
// Docker is its one implementation (moby/moby/client); tests use fakes.
package engine

import (
	"context"
	"io"
	"strings"
	"time"
)

// Engine is what xrun asks of a container engine.
type Engine interface {
	// Host is the daemon address in the form the user gave it, for messages.
	Host() string
	// Ping checks that the daemon answers and negotiates the API version.
	Ping(ctx context.Context) error
	// Info describes the daemon's platform and GPU support.
	Info(ctx context.Context) (Info, error)
	// ImageExists reports whether ref is on the host.
	ImageExists(ctx context.Context, ref string) (bool, error)
	// ImageID returns the image id of ref on the host.
	ImageID(ctx context.Context, ref string) (string, error)
	// ImageConfig returns the id, labels and environment of ref.
	ImageConfig(ctx context.Context, ref string) (ImageConfig, error)
	// Pull fetches ref from its registry, telling progress where it
	// stands after each of the daemon's messages.
	Pull(ctx context.Context, ref string, progress func(PullProgress)) error
	// Push uploads ref to its registry with the credentials the docker
	// CLI keeps for it (~/.docker/config.json), if any.
	Push(ctx context.Context, ref string, progress func(line string)) error
	// RemoveImage deletes ref from the host.
	RemoveImage(ctx context.Context, ref string) error
	// SaveImage returns ref as a docker save archive (docker load reads
	// it on another host).
	SaveImage(ctx context.Context, ref string) (io.ReadCloser, error)
	// Images lists the images carrying every label in labels (a value of
	// "" matches any value), intermediate ones included.
	Images(ctx context.Context, labels map[string]string) ([]Image, error)
	// Build builds the context tar (with its Dockerfile at the root) and
	// tags the image; progress gets each line of build output.
	Build(ctx context.Context, tar io.Reader, opts BuildOptions, progress func(line string)) (imageID string, err error)
	// Create makes a container and returns its id.
	Create(ctx context.Context, spec ContainerSpec) (id string, err error)
	// Start starts a created container.
	Start(ctx context.Context, id string) error
	// Wait waits for the container to stop; call it before Start to never
	// miss an exit (nextExit true), or on a running container (false).
	Wait(ctx context.Context, id string, nextExit bool) <-chan WaitResult
	// Logs writes the container's output to stdout and stderr until it is
	// done (or, with Follow, until the container stops or ctx ends).
	Logs(ctx context.Context, id string, opts LogOptions, stdout, stderr io.Writer) error
	// Stop sends SIGTERM, then SIGKILL after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Kill sends a signal ("KILL", "INT", ...).
	Kill(ctx context.Context, id, signal string) error
	// Exec runs a command in a running container, its output to stdout
	// and stderr (one stream with a TTY), stdin to its input when not
	// nil, and returns its exit code.
	Exec(ctx context.Context, id string, o ExecOptions, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// Remove deletes a container, stopping it first when force is true.
	Remove(ctx context.Context, id string, force bool) error
	// Rename gives container id a new name; it fails when a container
	// has that name already (the daemon's names are unique, so of two
	// renames to one name only one succeeds).
	Rename(ctx context.Context, id, name string) error
	// SetCPUs moves a container, running or not, onto the CPUs of cpuset
	// ("0-3,6"; the daemon leaves an empty one as it was).
	SetCPUs(ctx context.Context, id, cpuset string) error
	// CopyTo unpacks a tar stream into directory dir of a created (or
	// running) container.
	CopyTo(ctx context.Context, id, dir string, tar io.Reader) error
	// CopyFrom returns a tar stream of path inside the container.
	CopyFrom(ctx context.Context, id, path string) (io.ReadCloser, error)
	// Inspect returns the container's state; a missing container is ErrNotFound.
	Inspect(ctx context.Context, id string) (Container, error)
	// List returns containers carrying every label in labels (a value of
	// "" matches any value), stopped ones too when all is set.
	List(ctx context.Context, labels map[string]string, all bool) ([]Container, error)
	// Volumes returns the named volumes whose labels match labels (a
	// label with an empty value matches any value), with their sizes.
	Volumes(ctx context.Context, labels map[string]string) ([]Volume, error)
	// RemoveVolume deletes a named volume no container uses.
	RemoveVolume(ctx context.Context, name string) error
	// Close releases the connection.
	Close() error
}

// Info is what xrun needs to know about a daemon.
type Info struct {
	OS, Arch      string // GOOS/GOARCH spelling: "linux", "amd64"
	ServerVersion string
	APIVersion    string
	Name          string // the daemon's host name
	CPUs          int
	MemoryBytes   int64
	// NvidiaRuntime is true when an "nvidia" runtime is registered or the
	// daemon discovered CDI GPU devices, i.e. GPU device requests can work.
	NvidiaRuntime bool
	Runtimes      []string
	// DefaultRuntime is the runtime containers get unless they name one.
	DefaultRuntime string
}

// ImageConfig is what an image says of itself.
type ImageConfig struct {
	ID     string
	Labels map[string]string
	Env    []string // NAME=value
}

// Getenv returns the value of the image's environment variable name.
func (c ImageConfig) Getenv(name string) string {
	for _, kv := range c.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// Image is an image on the host.
type Image struct {
	ID   string
	Tags []string
	// Created is when the image was built; Size is its size in bytes,
	// layers shared with other images included.
	Created time.Time
	Size    int64
	Labels  map[string]string
	// Parent is the image this one was built on by the classic builder
	// (its intermediate build steps are images too), or "".
	Parent string
}

// BuildOptions are the parameters of one image build.
type BuildOptions struct {
	Tag    string
	Labels map[string]string
	// NoCache rebuilds every layer.
	NoCache bool
}

// GPURequest asks for GPUs: a count, device ids, or all (Count -1).
type GPURequest struct {
	Count int
	IDs   []string
}

// ContainerSpec is everything a job container is created with.
type ContainerSpec struct {
	Name       string
	Image      string
	Cmd        []string
	Entrypoint []string
	Env        []string // NAME=value
	Labels     map[string]string
	WorkingDir string
	// GPUs, when non-nil, becomes an nvidia device request.
	GPUs        *GPURequest
	ShmBytes    int64
	MemoryBytes int64
	// StopSignal overrides the image's stop signal.
	StopSignal string
	// NetworkDisabled runs the container without a network.
	NetworkDisabled bool
	// User runs the process as this uid:gid instead of the image's user.
	User string
	// PidsLimit caps the processes and threads of the container (0: none).
	PidsLimit int64
	// CPUSet is the CPUs the container may run on ("0-3,6"; "": all).
	CPUSet string
	// Unprivileged drops every capability and sets no-new-privileges.
	Unprivileged bool
	// CapAdd adds capabilities (such as SYS_ADMIN) to Docker's default set.
	CapAdd []string
	// Mounts are named volumes mounted into the container.
	Mounts []Mount
}

// Mount is a named volume mounted at Target, made with Labels on first use.
type Mount struct {
	Volume string
	Target string
	Labels map[string]string
}

// Volume is a named volume on the daemon.
type Volume struct {
	Name    string
	Labels  map[string]string
	Created time.Time
	// Size is its size in bytes and Containers how many containers use
	// it, as the daemon's disk usage counts them (-1: not known).
	Size       int64
	Containers int64
}

// WaitResult is how a container stopped.
type WaitResult struct {
	ExitCode int
	Err      error
}

// LogOptions select which logs to read.
type LogOptions struct {
	Follow     bool
	Tail       string // "all" or a number of lines
	Timestamps bool
}

// Container is the state of a container as the daemon reports it.
type Container struct {
	ID         string
	Name       string
	Image      string // the reference it was created from
	ImageID    string
	Labels     map[string]string
	State      string // created, running, paused, restarting, removing, exited, dead
	ExitCode   int
	OOMKilled  bool
	Error      string
	Created    time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	// MemoryBytes is the memory limit (0: none).
	MemoryBytes int64
	// CPUSet is the CPUs it may run on ("": all); Inspect reads it.
	CPUSet string
}

// Finished reports whether the container has exited (or died).
func (c Container) Finished() bool {
	return c.State == "exited" || c.State == "dead"
}

// ExecOptions is a command to run in a container (Engine.Exec).
type ExecOptions struct {
	Cmd []string
	// User is "uid:gid"; WorkingDir the command's directory; Env is added
	// to the container's environment.
	User       string
	WorkingDir string
	Env        []string
	// TTY gives the command a terminal.
	TTY bool
}
