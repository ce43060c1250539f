package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/moby/moby/client"

	"github.com/xrun-dev/xrun/internal/text"
)

// ErrNotFound is returned (wrapped) when a container or image does not exist.
var ErrNotFound = errors.New("not found")

// ErrNoGPURuntime is returned when a GPU container is asked of a host whose
// daemon has no NVIDIA container runtime.
var ErrNoGPURuntime = errors.New("this host has no NVIDIA container runtime; install nvidia-container-toolkit or pass --cpu")

// ErrIncompleteGPURuntime is returned when the host's NVIDIA container
// toolkit is only partly installed.
var ErrIncompleteGPURuntime = errors.New("this host's NVIDIA container toolkit is incomplete")

// ErrImageHasChildren is returned (wrapped) by RemoveImage for an image
// that another image is built on: it goes only after that one.
var ErrImageHasChildren = errors.New("another image is built on it")

// UnreachableError says the daemon did not answer.
type UnreachableError struct {
	Host string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Docker daemon at %s: %v (is it running? pick another host with --host or DOCKER_HOST)", e.Host, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// IsUnreachable reports an error that says the daemon did not answer, or
// stopped answering mid-request (a restart): the connection failed, was
// refused or reset, or its stream was cut.
func IsUnreachable(err error) bool {
	var ue *UnreachableError
	var oe *net.OpError
	return errors.As(err, &ue) || client.IsErrConnectionFailed(err) || errors.As(err, &oe) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}

// BuildError is a failed image build: the step that failed, the daemon's
// message and the last lines of output before it.
type BuildError struct {
	Step    string   // "Step 3/7 : RUN pip install triton"
	Message string   // the daemon's errorDetail message
	Last    []string // the last lines of output
}

func (e *BuildError) Error() string {
	var b strings.Builder
	b.WriteString("image build failed")
	if e.Step != "" {
		fmt.Fprintf(&b, " at %q", e.Step)
	}
	fmt.Fprintf(&b, ": %s", e.Message)
	if len(e.Last) > 0 {
		b.WriteString("\nlast output:\n  ")
		b.WriteString(strings.Join(e.Last, "\n  "))
	}
	return b.String()
}

// translate turns a daemon error into one of ours where we know better words.
func translate(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "could not select device driver"):
		return fmt.Errorf("%w (%s)", ErrNoGPURuntime, text.OneLine(msg))
	case strings.Contains(msg, "nvidia-container-cli") && strings.Contains(msg, "not found"):
		// The runtime hook is installed, but neither the legacy toolkit's
		// CLI nor an nvidia runtime (CDI mode) is there to serve it.
		return fmt.Errorf("%w: its NVIDIA runtime hook is installed but nvidia-container-cli is missing; install libnvidia-container-tools, or register the toolkit's CDI-mode runtime as \"nvidia\" (docs/gpu-host.md)", ErrIncompleteGPURuntime)
	case isNotFound(err):
		return fmt.Errorf("%s: %w", text.OneLine(msg), ErrNotFound)
	case strings.Contains(msg, "has dependent child images"):
		return fmt.Errorf("%s: %w", text.OneLine(msg), ErrImageHasChildren)
	}
	return err
}
