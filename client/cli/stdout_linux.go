package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// stdoutClosed returns a channel closed when out, a pipe, loses its
// reader (xrun submit DIR | head -3), or nil when out is not a pipe. poll
// with no events asked still reports POLLERR on a pipe whose reader is
// gone, without reading or writing anything.
func stdoutClosed(out io.Writer) <-chan struct{} {
	f, ok := out.(*os.File)
	if !ok {
		return nil
	}
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	closed := make(chan struct{})
	fd := int(f.Fd())
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			if fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				close(closed)
				return
			}
		}
	}()
	return closed
}
