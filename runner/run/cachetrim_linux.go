package run

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/xrun-dev/xrun/runner/sandbox"
)

// lastUse is when a cache file was last read or written, as far as the
// filesystem keeps access times.
func lastUse(fi fs.FileInfo) time.Time {
	u := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if a := time.Unix(st.Atim.Sec, st.Atim.Nsec); a.After(u) {
			u = a
		}
	}
	return u
}

// fsUser gives the calling thread (locked to its goroutine) the
// filesystem ids of u: its file accesses are u's from then on.
func fsUser(u *sandbox.User) error {
	if err := syscall.Setfsgid(u.GID); err != nil {
		return err
	}
	return syscall.Setfsuid(u.UID)
}
