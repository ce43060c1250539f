//go:build !linux

package run

import (
	"errors"
	"io/fs"
	"time"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// lastUse is when a cache file was last written.
func lastUse(fi fs.FileInfo) time.Time { return fi.ModTime() }

// fsUser needs Linux.
func fsUser(*sandbox.User) error {
	return errors.New("trimming the caches as the worker user needs Linux")
}
