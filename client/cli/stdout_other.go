//go:build !linux

package cli

import "io"

// stdoutClosed is not watched off Linux: a closed stdout is seen at the
// next write.
func stdoutClosed(io.Writer) <-chan struct{} { return nil }
