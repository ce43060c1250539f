//go:build !linux

package harness

import (
	"errors"
	"io"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// Zygote forks workers from one process on Linux only; elsewhere
// StartZygote fails and every worker starts on its own (Start).
type Zygote struct{ Loaded []string }

// StartZygote fails: the zygote needs Linux.
func StartZygote(argv []string, dir string, env []string, as *sandbox.User, log io.Writer) (*Zygote, error) {
	return nil, errors.New("start the zygote: workers are forked only on Linux")
}

// Start fails; see StartZygote.
func (z *Zygote) Start(c Config) (*Worker, error) { return nil, errors.New("no zygote") }

// Close does nothing.
func (z *Zygote) Close() {}
